// A prefill's copy of a row group whose codes are packed narrower than 8 bits with their top
// bits apart (5 bits: q5_0, q5_1, q5_K; 6 bits: q6_K; packed_matrix.h): the same codes as 8-bit
// ones (chunk g: elements 4g..4g+3 of each row) and each block's scales as f32, the values
// decode's tiles form (matmul_legacy.cpp), so that the tiles of tokens read codes and scales as
// they are and the unpacking is paid once per group, not once per tile of tokens.
// Compiled once per SIMD target.
// Included after hwy/highway.h by a foreach_target file: the guard toggles once per target.
#if defined(KITE_BACKENDS_CPU_MATMUL_WIDEN_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef KITE_BACKENDS_CPU_MATMUL_WIDEN_INL_H_
#undef KITE_BACKENDS_CPU_MATMUL_WIDEN_INL_H_
#else
#define KITE_BACKENDS_CPU_MATMUL_WIDEN_INL_H_
#endif

#include "backends/cpu/matmul_codes5-inl.h"
#include "backends/cpu/matmul_codes6-inl.h"

HWY_BEFORE_NAMESPACE();
namespace kite::cpu {
namespace HWY_NAMESPACE {

// The bytes of one widened block of a 16-row group: its 8-bit codes, then f32 d[16] and, where
// the layout has one, the f32 second (min or second half's scale) [16].
HWY_INLINE int64_t WideBlockBytes(const PackLayout& l) {
  return kPackRows * kQK + kPackRows * 4 * (l.has_min || l.half_scales ? 2 : 1);
}

// Calls fn.template operator()<P>() for the four chunks P of a block of 5-bit codes (Codes5).
template <typename Fn>
HWY_INLINE void EachChunk4(Fn&& fn) {
  fn.template operator()<0>();
  fn.template operator()<1>();
  fn.template operator()<2>();
  fn.template operator()<3>();
}

// The codes of one block of a 16-row group (kBits 5 or 6, at `src`) as 8-bit ones at `dst`.
template <int kBits>
HWY_INLINE void WidenCodes(const uint8_t* src, uint8_t* dst) {
  const DI di;
  auto store = [&](VI q, int chunk, int v) HWY_ATTR {
    hn::StoreU(q, di, reinterpret_cast<int32_t*>(dst + 64 * chunk + 4 * kLanes * v));
  };
  for (int v = 0; v < kVecs; ++v) {
    if constexpr (kBits == 5) {
      EachChunk4([&]<int P>() HWY_ATTR {
        VI lo, hi;
        Codes5<P>(src + 4 * kLanes * v, lo, hi);
        store(lo, P, v);
        store(hi, P + 4, v);
      });
    } else {
      static_assert(kBits == 6);
      constexpr int kChunk[4] = {0, 4, 1, 5};  // of q[j], plus 2h
      for (int h = 0; h < 2; ++h) {
        VI q[4];
        Codes6(src + 4 * kLanes * v, h, q);
        for (int j = 0; j < 4; ++j) store(q[j], kChunk[j] + 2 * h, v);
      }
    }
  }
}

// The `blocks` blocks of 5-bit codes of a 16-row group (q5_0, q5_1: layout `l`, at `src`),
// widened at `dst` (WideBlockBytes(l) a block), d (and m) as f32.
HWY_INLINE void Widen5(const uint8_t* src, int64_t blocks, const PackLayout& l, uint8_t* dst) {
  const DF df;
  constexpr int64_t kCodeBytes5 = kPackRows * kQK * 5 / 8;
  const int scales = l.has_min ? 2 : 1;
  for (int64_t b = 0; b < blocks; ++b, src += l.block_bytes, dst += WideBlockBytes(l)) {
    WidenCodes<5>(src, dst);
    for (int s = 0; s < scales * kVecs; ++s) {
      hn::StoreU(LoadF16(src + kCodeBytes5 + 2 * kLanes * s), df,
                 reinterpret_cast<float*>(dst + kPackRows * kQK) + kLanes * s);
    }
  }
}

// The super-blocks of kBits-bit codes of a 16-row group (the k-quants: q5_K, q6_K, layout `l`,
// at `src`) widened at `dst` (WideBlockBytes(l) a block of 32), each block's scale and second
// (min or second half's scale) as f32 products with the super-block's d (or -dmin).
template <int kBits>
HWY_INLINE void WidenSuper(const uint8_t* src, int64_t supers, const PackLayout& l,
                           uint8_t* dst) {
  const DF df;
  constexpr int64_t kCodeBytes = kPackRows * kQK * kBits / 8;
  for (int64_t s = 0; s < supers; ++s) {
    const uint8_t* header = src;
    src += l.header_bytes;
    for (int64_t b = 0; b < kQKK / kQK; ++b, src += l.block_bytes, dst += WideBlockBytes(l)) {
      WidenCodes<kBits>(src, dst);
      for (int v = 0; v < kVecs; ++v) {
        const VF d = LoadF16(header + 2 * kLanes * v);
        const VF second_d = l.has_min ? LoadF16(header + 2 * (kPackRows + kLanes * v)) : d;
        const uint8_t* scales = src + kCodeBytes + kLanes * v;
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

#endif  // KITE_BACKENDS_CPU_MATMUL_WIDEN_INL_H_
