// The type families, one file each. A new type in an existing family is one row in that file
// (and its enumerator in dtype.h); a new family is a new file here and one entry in the list in
// dtype.cpp. A row needs:
//   - always: dtype, ggml's name, block size and block bytes (from ggml-common.h);
//   - to be read (Dequantize, the ref backend, embeddings, GGUF checks): `dequantize`;
//   - to be written (Quantize, kite synth/quantize tests): `quantize` and `quantize_input`;
//   - to be written as llama.cpp writes it, optionally importance-weighted (QuantizeRows):
//     `quantize_search`;
//   - for kite synth to offer it: `file_type` (llama.cpp's LLAMA_FTYPE) and, for block types,
//     `fallback` (llama.cpp's tensor_type_fallback);
//   - for the cpu backend's matmul: `codes` (family, code bits, zero, min, sub-block) and
//     `unpack`; the cpu backend then packs it when those facts match a kernel it has
//     (backends/cpu/packed_matrix.cpp LayoutOf says which).
// Internal to the tensor layer.
#pragma once

#include <span>

#include "tensor/dtype_row.h"

namespace kite::internal {

std::span<const DTypeRow> FloatTypeRows();    // f32, f16, bf16
std::span<const DTypeRow> LegacyQuantRows();  // q4_0, q4_1, q5_0, q5_1, q8_0, q8_1
std::span<const DTypeRow> KQuantRows();       // q2_K … q8_K
std::span<const DTypeRow> NonLinearQuantRows();  // iq4_nl, iq4_xs
std::span<const DTypeRow> OtherTypeRows();    // types Kite only knows the size of
std::span<const DTypeRow> PackedInt4Rows();   // i4, u4: Kite's packed 4-bit weight codes

}  // namespace kite::internal
