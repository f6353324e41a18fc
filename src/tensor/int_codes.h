// The integer codes of a quantized value (graph/encoding.h) as they lie in memory: i8, u8, i16,
// u16 one code an element, and Kite's packed 4-bit i4/u4 two codes a byte, element 2j in the
// low nibble of byte j and 2j + 1 in the high one (two's complement nibbles for i4).
#pragma once

#include <cstdint>

#include "tensor/dtype.h"

namespace kite {

// Whether `dtype` holds integer codes these functions read and write.
bool IsCodeType(DType dtype);

// out[i] = code of element first + i of `data`, for i in [0, n). dtype: IsCodeType.
void ReadCodes(DType dtype, const void* data, int64_t first, int64_t n, int32_t* out);

// Stores codes[0, n) as elements [0, n) of `data` (BytesFor(dtype, n) bytes; 4-bit: n even).
// Each code must fit the dtype; the bits beyond its width are dropped.
void WriteCodes(DType dtype, const int32_t* codes, int64_t n, void* data);

}  // namespace kite
