// 6-bit weight codes (q6_K repacked, packed_matrix.h) against int8 activations, for
// matmul_legacy.cpp: decode's dot products read the packed codes (DotSubBlock6), a prefill
// widens them to the 8-bit layout once per row group (matmul_widen-inl.h). Compiled once per
// SIMD target.
// Included after hwy/highway.h by a foreach_target file: the guard toggles once per target.
#if defined(KITE_BACKENDS_CPU_MATMUL_CODES6_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef KITE_BACKENDS_CPU_MATMUL_CODES6_INL_H_
#undef KITE_BACKENDS_CPU_MATMUL_CODES6_INL_H_
#else
#define KITE_BACKENDS_CPU_MATMUL_CODES6_INL_H_
#endif

#include <cstring>

#include "backends/cpu/matmul_int_dot-inl.h"
#include "tensor/quant_blocks.h"

HWY_BEFORE_NAMESPACE();
namespace kite::cpu {
namespace HWY_NAMESPACE {

// The codes of vector `base` (a 16-row group's sub-block, kLanes rows at 4·kLanes·v) whose high
// bits lie in high vector h, as unsigned bytes: q[0], q[1] the low and high nibbles of chunk 2h
// (elements 8h.. and 16+8h..), q[2], q[3] those of chunk 2h+1 (8h+4.. and 20+8h..). Each is
// (nibble) | (its two high bits shifted over bits 4-5): a shift or two, a mask and a masked or
// (OrAnd, one vpternlogd with AVX-512).
HWY_INLINE void Codes6(const uint8_t* base, int h, VI (&q)[4]) {
  const DI di;
  const VI nibble = hn::Set(di, 0x0f0f0f0f);
  const VI high_bits = hn::Set(di, 0x30303030);
  const VI high = LoadCodes(base + 256 + 64 * h);
  const VI w0 = LoadCodes(base + 64 * (2 * h));
  const VI w1 = LoadCodes(base + 64 * (2 * h + 1));
  q[0] = hn::OrAnd(hn::And(hn::ShiftLeft<4>(high), high_bits), w0, nibble);
  q[1] = hn::OrAnd(hn::And(hn::ShiftLeft<2>(high), high_bits), hn::ShiftRight<4>(w0), nibble);
  q[2] = hn::OrAnd(hn::And(high, high_bits), w1, nibble);
  q[3] = hn::OrAnd(hn::And(hn::ShiftRight<2>(high), high_bits), hn::ShiftRight<4>(w1), nibble);
}

// Accumulates a sub-block of 32 six-bit codes of 16 rows (at codes[g], per group) against each
// token's 32 activations at act[c] + at: elements 0..15 into dot, 16..31 into dot2; one VNNI
// dot a vector of codes, as for 8-bit codes.
template <int C, int G>
HWY_INLINE KITE_VNNI void DotSubBlock6(const uint8_t* const (&codes)[G], const int8_t* const* act,
                                       int64_t at, VI (&dot)[C][G * kVecs],
                                       VI (&dot2)[C][G * kVecs]) {
  for (int h = 0; h < 2; ++h) {
    for (int v = 0; v < G * kVecs; ++v) {
      VI q[4];
      Codes6(VecAt<G>(codes, v, 4 * kLanes), h, q);
      for (int c = 0; c < C; ++c) {
        const int8_t* a = act[c] + at + 8 * h;
        if constexpr (kPairedDot) {
          dot[c][v] = Dot2<6>(dot[c][v], q[0], Broadcast4(a), q[2], Broadcast4(a + 4));
          dot2[c][v] = Dot2<6>(dot2[c][v], q[1], Broadcast4(a + 16), q[3], Broadcast4(a + 20));
        } else {
          dot[c][v] = Dot<6>(dot[c][v], q[0], Broadcast4(a));
          dot2[c][v] = Dot<6>(dot2[c][v], q[1], Broadcast4(a + 16));
          dot[c][v] = Dot<6>(dot[c][v], q[2], Broadcast4(a + 4));
          dot2[c][v] = Dot<6>(dot2[c][v], q[3], Broadcast4(a + 20));
        }
      }
    }
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace kite::cpu
HWY_AFTER_NAMESPACE();

#endif  // KITE_BACKENDS_CPU_MATMUL_CODES6_INL_H_
