// Reference quantizers: F32 to the stored types that Dequantize reads, for round-trip tests and
// for writing GGUF files that llama.cpp can run.
#pragma once

#include <cstdint>

#include "base/status.h"
#include "tensor/dtype.h"

namespace kite {

// Quantizes n elements (a whole number of blocks) of src into BytesFor(dtype, n) bytes at dst
// (no alignment needed), for the types whose row (tensor/types/) has an encoder: all those
// Dequantize accepts.
//  - F16, BF16: round to nearest even (NaN stays NaN, F16 overflow gives inf).
//  - Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_K: the same bytes as ggml's quantize_row_*_ref.
//  - Q2_K … Q6_K: a round-to-nearest quantizer with min/max scales (simpler than ggml's
//    search, so its bytes differ, but the blocks are valid and decode within half a step;
//    QuantizeRows below writes ggml's bytes).
//  - IQ4_NL, IQ4_XS: llama.cpp's quantizer, the bytes of QuantizeRows without importance.
// Errors: Unsupported for other types; InvalidInput when n is negative or not a multiple of the
// block size, or (quantized types) when an element is NaN or infinite, or too large for the
// type's F16 scales (|x| > 65504).
Status Quantize(DType dtype, const float* src, void* dst, int64_t n);

// Quantizes `rows` rows of n_per_row elements (a whole number of blocks) of src into
// rows * BytesFor(dtype, n_per_row) bytes at dst, as llama.cpp's
// ggml_quantize_chunk(type, src, dst, 0, rows, n_per_row, importance) does, byte for byte:
// its scale searches, weighted by `importance` (n_per_row floats, one per column, e.g. an
// imatrix's mean squared activations) when not null. Types: Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q2_K Q3_K
// Q4_K Q5_K Q6_K IQ4_NL IQ4_XS (Q8_0 ignores importance, as ggml does).
// Errors: Unsupported for other types; InvalidInput when rows or n_per_row is negative,
// n_per_row is not a whole number of blocks, an element is NaN, infinite or beyond ±65504
// (naming its row and column), or an importance value is negative or not finite.
Status QuantizeRows(DType dtype, const float* src, void* dst, int64_t rows, int64_t n_per_row,
                    const float* importance);

}  // namespace kite
