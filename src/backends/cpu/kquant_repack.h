// K-quants (q4_K, q5_K, q6_K, iq4_xs) repacked at load for the int8 dot product: their codes
// into the legacy layout's blocks of 32 (packed_matrix.h), their scales kept as the file has
// them, an f16 d (and dmin) per super-block of 256 and an integer scale (and min) per sub-block,
// so that a kernel forms each block's d·scale in f32 exactly as ggml does.
//
// The integer scales are kept as int8 beside their block's codes, not multiplied out into an f16
// per block: a kernel converts them with as many vector ops as an f16 takes (widen, convert,
// multiply by d per 16 rows), and the layout streams the file's bytes a weight (q4_K 4.625 bits
// instead of 5, q6_K 6.56 instead of 7), which decode, bound by the bytes it streams, feels.
#pragma once

#include <cstdint>
#include <optional>

#include "backends/cpu/packed_matrix.h"
#include "tensor/dtype_row.h"

namespace kite::cpu {

// The layout k-quant `row` is repacked into: q4_K's codes as q4_1's (kSuper4Min), iq4_xs's as
// iq4_nl's (kSuper4Levels), q5_K's 5-bit codes (kSuper5Min), q6_K
// with a scale per half block (kSuper6Halves); nullopt for a type it does not know.
std::optional<PackLayout> RepackedKQuantLayout(const DTypeRow& row);

// The integer scales of sub-block `sub` (of 32) of the unpacked super-block `super`: its scale,
// and its min (q4_K, q5_K) or its second half's scale (q6_K; sub-blocks of 16), else 0.
struct SubBlockScales {
  int8_t scale = 0;
  int8_t second = 0;
};
SubBlockScales ScalesOfSubBlock(const UnpackedBlock& super, int sub, const PackLayout& layout);

}  // namespace kite::cpu
