// Matmul kernels of the k-quant types (super-block 256: q4_K, q5_K, q6_K, iq4_xs), compiled per
// SIMD target (Highway foreach_target) and dispatched at run time.
#include <cmath>
#include <cstring>

#define HWY_WANT_AVX3_DL
// SSSE3/SSE4 machines fall back to the baseline target; skipping them halves the build time.
#define HWY_DISABLED_TARGETS (HWY_SSSE3 | HWY_SSE4)
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backends/cpu/matmul_kquant.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
// clang-format off: after highway.h, once per target
#include "backends/cpu/matmul_int_dot-inl.h"
// clang-format on

#include "backends/cpu/matmul_kernels.h"
#include "tensor/quant_blocks.h"

HWY_BEFORE_NAMESPACE();
namespace kite::cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// K-quants (super-block 256): per sub-block the int32 dot times its integer scale is summed
// over the super-block, then acc += d·da·Σ - dmin·da·Σ(min·Σq).
template <int C, int G, int kBits, bool kMin, bool kLevels>
KITE_VNNI void KQuantTile(const MatMulJob& job, const uint8_t* const (&groups)[G], int64_t t0,
                          float (&out)[C][G * kPackRows]) {
  constexpr int R = G * kVecs;
  const DF df;
  const DI di;
  const PackLayout& l = job.w->layout();
  const LevelTable table(kLevels ? l.levels : nullptr);
  const int64_t k = job.w->cols();
  const int64_t supers = k / kQKK;
  const int64_t sub_bytes = kPackRows * 32 * kBits / 8;
  const int64_t code_bytes = 8 * sub_bytes;
  const int64_t scales_at = code_bytes + 4 * kPackRows * (kMin ? 2 : 1);
  const int sums_per_super = kMin ? 8 : 16;
  const int8_t* act[C];
  const float* scale[C];
  const int32_t* sums[C];
  for (int c = 0; c < C; ++c) {
    act[c] = job.qs + (t0 + c) * k;
    scale[c] = job.scale + (t0 + c) * supers;
    sums[c] = job.sums + (t0 + c) * supers * sums_per_super;
  }
  VF acc[C][R];
  for (int c = 0; c < C; ++c)
    for (int v = 0; v < R; ++v) acc[c][v] = hn::Zero(df);
  for (int64_t sb = 0; sb < supers; ++sb) {
    const uint8_t* block[G];
    for (int g = 0; g < G; ++g) block[g] = groups[g] + sb * l.block_bytes;
    if constexpr (C == 1) PrefetchAhead<G>(block, job.tile.prefetch, l.block_bytes);
    VI isum[C][R];
    VI msum[C][R];
    for (int c = 0; c < C; ++c)
      for (int v = 0; v < R; ++v) isum[c][v] = msum[c][v] = hn::Zero(di);
    for (int s = 0; s < 8; ++s) {
      VI dot[C][R];
      VI dot2[C][R];
      for (int c = 0; c < C; ++c)
        for (int v = 0; v < R; ++v) dot[c][v] = dot2[c][v] = hn::Zero(di);
      const uint8_t* sub[G];
      for (int g = 0; g < G; ++g) sub[g] = block[g] + s * sub_bytes;
      DotSubBlock<C, G, kBits, kLevels>(sub, act, sb * kQKK + 32 * s, dot, dot2, table.biased);
      for (int v = 0; v < R; ++v) {
        const uint8_t* scales = VecAt<G>(block, v, kLanes) + scales_at;
        if constexpr (kMin) {
          const VI sc = LoadU8AsI32(scales + s * kPackRows);
          const VI mn = LoadU8AsI32(scales + (8 + s) * kPackRows);
          for (int c = 0; c < C; ++c) {
            isum[c][v] = hn::Add(isum[c][v], hn::Mul(hn::Add(dot[c][v], dot2[c][v]), sc));
            msum[c][v] = hn::Add(msum[c][v], hn::Mul(mn, hn::Set(di, sums[c][sb * 8 + s])));
          }
        } else {  // q6_K, iq4_xs: codes less the zero, two sub-blocks of 16 per 32
          const VI sc1 = LoadI8AsI32(scales + (2 * s) * kPackRows);
          const VI sc2 = LoadI8AsI32(scales + (2 * s + 1) * kPackRows);
          for (int c = 0; c < C; ++c) {
            const int32_t* s16 = sums[c] + sb * 16 + 2 * s;
            const VI d1 = hn::Sub(dot[c][v], hn::Set(di, l.zero * s16[0]));
            const VI d2 = hn::Sub(dot2[c][v], hn::Set(di, l.zero * s16[1]));
            isum[c][v] = hn::Add(isum[c][v], hn::Add(hn::Mul(d1, sc1), hn::Mul(d2, sc2)));
          }
        }
      }
    }
    for (int v = 0; v < R; ++v) {
      const uint8_t* tail = VecAt<G>(block, v, 4 * kLanes) + code_bytes;
      const VF d = LoadF32(tail);
      for (int c = 0; c < C; ++c) {
        const VF dd = hn::Mul(d, hn::Set(df, scale[c][sb]));
        acc[c][v] = hn::MulAdd(dd, hn::ConvertTo(df, isum[c][v]), acc[c][v]);
        if constexpr (kMin) {
          const VF dmin = LoadF32(tail + 4 * kPackRows);
          const VF dm = hn::Mul(dmin, hn::Set(df, scale[c][sb]));
          acc[c][v] = hn::NegMulAdd(dm, hn::ConvertTo(df, msum[c][v]), acc[c][v]);
        }
      }
    }
  }
  for (int c = 0; c < C; ++c)
    for (int v = 0; v < R; ++v) hn::StoreU(acc[c][v], df, out[c] + v * kLanes);
}

template <int kBits, bool kMin, bool kLevels = false>
struct KQuant {
  template <int C, int G>
  struct Tile {
    static void Run(const MatMulJob& job, const uint8_t* const (&g)[G], int64_t t0,
                    float (&o)[C][G * kPackRows]) {
      KQuantTile<C, G, kBits, kMin, kLevels>(job, g, t0, o);
    }
  };
};

void KQuantMatMulGroups(const MatMulJob& job, int64_t begin, int64_t end) {
  switch (job.w->layout().kernel) {
    case PackKernel::kKQuant4Min:
      return Groups<4, KQuant<4, true>::Tile>(job, begin, end);
    case PackKernel::kKQuant8Min:
      return Groups<4, KQuant<8, true>::Tile>(job, begin, end);
    case PackKernel::kKQuant8:
      return Groups<4, KQuant<8, false>::Tile>(job, begin, end);
    case PackKernel::kKQuant4Levels:
      return Groups<4, KQuant<4, false, true>::Tile>(job, begin, end);
    default:
      return;  // not a k-quant layout: MatMulGroups sends only these here
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace kite::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kite::cpu {
HWY_EXPORT(KQuantMatMulGroups);
void KQuantMatMulGroups(const MatMulJob& job, int64_t begin, int64_t end) {
  HWY_DYNAMIC_DISPATCH(KQuantMatMulGroups)(job, begin, end);
}
}  // namespace kite::cpu
#endif  // HWY_ONCE
