// Types Kite knows only the size of, so that a GGUF file holding them can still be read and its
// other tensors used: ggml's codebook quants (iq* but iq4_nl and iq4_xs), ternary quants (tq*), integers and f64; and
// Kite's own unsigned integer activations (u8, u16), which never appear in a file.
// Block layouts from ggml's ggml-common.h (QK_K = 256).
#include "tensor/types/families.h"

namespace kite::internal {

namespace {

constexpr DTypeRow kRows[] = {
    {.dtype = DType::kIQ2_XXS, .name = "iq2_xxs", .block_size = 256, .block_bytes = 66},
    {.dtype = DType::kIQ2_XS, .name = "iq2_xs", .block_size = 256, .block_bytes = 74},
    {.dtype = DType::kIQ3_XXS, .name = "iq3_xxs", .block_size = 256, .block_bytes = 98},
    {.dtype = DType::kIQ1_S, .name = "iq1_s", .block_size = 256, .block_bytes = 50},
    {.dtype = DType::kIQ3_S, .name = "iq3_s", .block_size = 256, .block_bytes = 110},
    {.dtype = DType::kIQ2_S, .name = "iq2_s", .block_size = 256, .block_bytes = 82},
    {.dtype = DType::kI8, .name = "i8", .block_size = 1, .block_bytes = 1},
    {.dtype = DType::kI16, .name = "i16", .block_size = 1, .block_bytes = 2},
    {.dtype = DType::kI32, .name = "i32", .block_size = 1, .block_bytes = 4},
    {.dtype = DType::kI64, .name = "i64", .block_size = 1, .block_bytes = 8},
    {.dtype = DType::kF64, .name = "f64", .block_size = 1, .block_bytes = 8},
    {.dtype = DType::kIQ1_M, .name = "iq1_m", .block_size = 256, .block_bytes = 56},
    {.dtype = DType::kTQ1_0, .name = "tq1_0", .block_size = 256, .block_bytes = 54},
    {.dtype = DType::kTQ2_0, .name = "tq2_0", .block_size = 256, .block_bytes = 66},
    {.dtype = DType::kU8, .name = "u8", .block_size = 1, .block_bytes = 1},
    {.dtype = DType::kU16, .name = "u16", .block_size = 1, .block_bytes = 2},
};

}  // namespace

std::span<const DTypeRow> OtherTypeRows() { return kRows; }

}  // namespace kite::internal
