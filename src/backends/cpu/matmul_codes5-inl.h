// 5-bit weight codes (q5_0, q5_1 and q5_K packed, packed_matrix.h) against int8 activations, for
// matmul_legacy.cpp: decode's dot products read the packed codes (DotSubBlock5), 20 bytes a row
// and block as in the file (stored as 8-bit codes, q5_0's decode read 32, as 6-bit ones q5_K's
// 24); a prefill widens them to the 8-bit layout once per row group (matmul_widen-inl.h).
// Compiled once per SIMD target.
// Included after hwy/highway.h by a foreach_target file: the guard toggles once per target.
#if defined(KITE_BACKENDS_CPU_MATMUL_CODES5_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef KITE_BACKENDS_CPU_MATMUL_CODES5_INL_H_
#undef KITE_BACKENDS_CPU_MATMUL_CODES5_INL_H_
#else
#define KITE_BACKENDS_CPU_MATMUL_CODES5_INL_H_
#endif

#include "backends/cpu/matmul_int_dot-inl.h"

HWY_BEFORE_NAMESPACE();
namespace kite::cpu {
namespace HWY_NAMESPACE {

// The codes of chunk P of vector `base` (a 16-row group's block, kLanes rows at 4·kLanes·v) as
// unsigned bytes below 32: lo those of elements 4P.. (the chunk's low nibbles, their top bits at
// bit P of the top-bit vector), hi those of 16+4P.. (high nibbles, top bits at bit P+4). A
// shift, a mask and a masked or each.
template <int P>
HWY_INLINE void Codes5(const uint8_t* base, VI& lo, VI& hi) {
  const DI di;
  const VI nibble = hn::Set(di, 0x0f0f0f0f);
  const VI top = hn::Set(di, 0x10101010);
  const VI w = LoadCodes(base + 64 * P);
  const VI bits = LoadCodes(base + 256);
  const VI lo_top = hn::ShiftLeft<4 - P>(bits);
  const VI hi_top = hn::ShiftRight<P>(bits);
  lo = hn::OrAnd(hn::And(w, nibble), lo_top, top);
  hi = hn::OrAnd(hn::And(hn::ShiftRight<4>(w), nibble), hi_top, top);
}

// Chunk P of DotSubBlock5. (A function, not a lambda: a lambda would not carry KITE_VNNI's
// target, and clang refuses to inline Dot2 into it.)
template <int P, int C, int G>
HWY_INLINE KITE_VNNI void DotChunk5(const uint8_t* const (&codes)[G], const int8_t* const* act,
                                    int64_t at, VI (&dot)[C][G * kVecs]) {
  for (int v = 0; v < G * kVecs; ++v) {
    VI lo, hi;
    Codes5<P>(VecAt<G>(codes, v, 4 * kLanes), lo, hi);
    for (int c = 0; c < C; ++c) {
      const int8_t* a = act[c] + at + 4 * P;
      dot[c][v] = Dot2<5>(dot[c][v], lo, Broadcast4(a), hi, Broadcast4(a + 16));
    }
  }
}

// Accumulates a block of 32 five-bit codes of 16 rows (at codes[g], per group) against each
// token's 32 activations at act[c] + at into dot: a chunk's two code vectors in one Dot2 (their
// pmaddubsw pair sums, at most 2·31·127 each, share one pmaddwd where there is no VNNI).
template <int C, int G>
HWY_INLINE KITE_VNNI void DotSubBlock5(const uint8_t* const (&codes)[G], const int8_t* const* act,
                                       int64_t at, VI (&dot)[C][G * kVecs]) {
  DotChunk5<0, C, G>(codes, act, at, dot);
  DotChunk5<1, C, G>(codes, act, at, dot);
  DotChunk5<2, C, G>(codes, act, at, dot);
  DotChunk5<3, C, G>(codes, act, at, dot);
}

}  // namespace HWY_NAMESPACE
}  // namespace kite::cpu
HWY_AFTER_NAMESPACE();

#endif  // KITE_BACKENDS_CPU_MATMUL_CODES5_INL_H_
