// K-quants (q4_K, q5_K, q6_K, iq4_xs) repacked at load into the legacy layout of blocks of 32
// (packed_matrix.h), so that the matmul kernels read a scale (and min) per block ready for the
// int8 dot product instead of multiplying integer sub-block scales per token: each sub-block's
// integer scale times the super-block's d (and dmin times its min) becomes one f16.
//
// Rounding: ggml computes d·sc and dmin·mn in f32, exactly (an f16 times an integer below 2^8);
// here they are rounded to f16, so the float rounding differs from ggml's: each of d·sc·q and
// dmin·mn moves by at most 2^-11 of itself, 8x below the int8 activation step the kernels
// already take (1/254 of a block's largest |x|). In exchange the kernels do no integer
// multiplies: a q4_K GEMV costs up to 25% less compute per weight (bench/matmul_bench by CPU
// time; README, Performance). f32 scales would be exact but cost a bit a weight more (6 instead
// of 5 for q4_K), 20% more bytes to stream, about all that the compute saves.
#pragma once

#include <optional>

#include "backends/cpu/packed_matrix.h"
#include "tensor/dtype_row.h"

namespace kite::cpu {

// The legacy layout k-quant `row` is repacked into: q4_K as q4_1 (kLegacy4Min), iq4_xs as
// iq4_nl (kLegacy4Levels), q5_K with its 5-bit codes in the 6-bit layout (kLegacy6Min), q6_K
// with an f16 scale per half block (kLegacy6Halves); nullopt for a type it does not know.
std::optional<PackLayout> RepackedKQuantLayout(const DTypeRow& row);

// Sub-block `sub` (of 32) of the unpacked super-block `super` as a block of `layout`: its codes,
// the f16 scale in d16 and the f16 min (kLegacy6Halves: the second half's scale) in m16. False
// when a scale or min is past the f16 range (only a file whose weights are too).
bool ToLegacyBlock(const UnpackedBlock& super, int sub, const PackLayout& layout,
                   UnpackedBlock* out);

}  // namespace kite::cpu
