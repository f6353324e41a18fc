// Conversion of stored weights (plain floats and ggml's quantized blocks) to F32.
#pragma once

#include <cstdint>

#include "base/status.h"
#include "tensor/dtype.h"

namespace kite {

// Dequantizes n elements (a whole number of blocks) of `dtype` at src into dst, exactly as
// llama.cpp's dequantize_row_* does. Types: those whose row (tensor/types/) has a decoder:
// F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, Q8_K (the ones with
// DTypeTraits::can_dequantize). src needs no alignment and holds BytesFor(dtype, n) bytes; dst
// holds n floats. Errors: Unsupported for other types, InvalidInput when n is negative or not a
// multiple of the block size. The bytes themselves are not checked: every bit pattern decodes to
// some float.
Status Dequantize(DType dtype, const void* src, float* dst, int64_t n);

}  // namespace kite
