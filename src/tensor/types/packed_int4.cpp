// Kite's packed 4-bit integer codes (i4 signed, u4 unsigned): the codes of a weight quantized to
// a 4-bit encoding (graph/encoding.h), two per byte, low nibble first. A block is the two codes
// of one byte. They have no decoder of their own: a code means nothing without its encoding,
// which the ref backend applies (backends/ref/matmul.cpp) and the cpu backend repacks.
#include "tensor/types/families.h"

namespace kite::internal {

namespace {

constexpr DTypeRow kRows[] = {
    {.dtype = DType::kI4, .name = "i4", .block_size = 2, .block_bytes = 1},
    {.dtype = DType::kU4, .name = "u4", .block_size = 2, .block_bytes = 1},
};

}  // namespace

std::span<const DTypeRow> PackedInt4Rows() { return kRows; }

}  // namespace kite::internal
