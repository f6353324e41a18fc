// 6-bit weight codes (q5_K and q6_K repacked, packed_matrix.h) against int8 activations, for
// matmul_legacy.cpp: decode's dot products read the packed codes (DotSubBlock6), a prefill
// widens them to the 8-bit layout once per row group (Widen6). Compiled once per SIMD target.
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

// The bytes of one block of a 16-row group widened for a prefill (Widen6, Widen5): its 8-bit
// codes, then f32 d[16] and, where the layout has one, the f32 second (min or second half's
// scale) [16].
HWY_INLINE int64_t WideBlockBytes(const PackLayout& l) {
  return kPackRows * kQK + kPackRows * 4 * (l.has_min || l.half_scales ? 2 : 1);
}

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

// A 16-row group's super-blocks of 6-bit codes (layout `l`, at `src`) rewritten as blocks of
// the 8-bit layout (chunk g: elements 4g..4g+3 of each row, unsigned), each block's scale and
// second (min or second half's scale) as f32 products with the super-block's d (or -dmin), the
// values decode's tiles form (matmul_legacy.cpp), at `dst` (WideBlockBytes(l) a block), for a
// prefill: its tiles of tokens then read codes and scales as they are.
HWY_INLINE void Widen6(const uint8_t* src, int64_t supers, const PackLayout& l, uint8_t* dst) {
  const DF df;
  const DI di;
  constexpr int64_t kCodeBytes6 = kPackRows * kQK * 6 / 8;
  constexpr int kChunk[4] = {0, 4, 1, 5};  // of q[j], plus 2h
  for (int64_t s = 0; s < supers; ++s) {
    const uint8_t* header = src;
    src += l.header_bytes;
    for (int64_t b = 0; b < kQKK / kQK; ++b, src += l.block_bytes, dst += WideBlockBytes(l)) {
      for (int v = 0; v < kVecs; ++v) {
        for (int h = 0; h < 2; ++h) {
          VI q[4];
          Codes6(src + 4 * kLanes * v, h, q);
          for (int j = 0; j < 4; ++j) {
            hn::StoreU(q[j], di,
                       reinterpret_cast<int32_t*>(dst + 64 * (kChunk[j] + 2 * h) + 4 * kLanes * v));
          }
        }
        const VF d = LoadF16(header + 2 * kLanes * v);
        const VF second_d = l.has_min ? LoadF16(header + 2 * (kPackRows + kLanes * v)) : d;
        const uint8_t* scales = src + kCodeBytes6 + kLanes * v;
        float* wide = reinterpret_cast<float*>(dst + kPackRows * kQK) + kLanes * v;
        hn::StoreU(hn::Mul(d, hn::ConvertTo(df, LoadI8AsI32(scales))), df, wide);
        hn::StoreU(hn::Mul(second_d, hn::ConvertTo(df, LoadI8AsI32(scales + kPackRows))), df,
                   wide + kPackRows);
      }
    }
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace kite::cpu
HWY_AFTER_NAMESPACE();

#endif  // KITE_BACKENDS_CPU_MATMUL_CODES6_INL_H_
