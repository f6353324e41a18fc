// Matmul kernels of the legacy block types (block 32: q4_0, q4_1, q5_0, q5_1, q8_0, iq4_nl), of
// the k-quants repacked into them at load (q4_K as q4_1, iq4_xs as iq4_nl, q5_K as 5-bit codes,
// q6_K as 6-bit ones: kquant_repack.h) and of the encoded NPU layouts packed into them
// (int8/int4 per channel or group, LPBQ), compiled per SIMD target (Highway foreach_target) and
// dispatched at run time.
#include <cmath>
#include <cstring>
#include <vector>

#define HWY_WANT_AVX3_DL
// SSSE3/SSE4 machines fall back to the baseline target; skipping them halves the build time.
#define HWY_DISABLED_TARGETS (HWY_SSSE3 | HWY_SSE4)
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backends/cpu/matmul_legacy.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
// clang-format off: after highway.h, once per target
#include "backends/cpu/matmul_widen-inl.h"
#include "backends/cpu/matmul_dequant_pairs-inl.h"
// clang-format on

#include "backends/cpu/matmul_kernels.h"
#include "tensor/quant_blocks.h"

HWY_BEFORE_NAMESPACE();
namespace kite::cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Legacy types (block 32): acc += d·(da·dot - offset) (+ m·offset for q4_1, whose offset is
// da·Σq). d and m are f16, or f32 (kF32: encoded weights whose scales f16 cannot hold).
// kLevels: non-linear 4-bit codes (iq4_nl) read through the layout's level table.
// kHalves (symmetric: lpbq16, q6_K): a scale per 16 elements, d for elements 0..15 (dot) and d2
// for 16..31 (dot2), each with its own activation offset.
// kSuper (the k-quants): d = d_super·scale and m = -dmin_super·min, formed in f32 from the
// super-block's f16s and the block's int8 scales (kquant_repack.h); the same products ggml forms.
// kBits 5: q5_0, q5_1 and q5_K as packed; kBits 6: q6_K. kCodeBits: the codes' width where it
// is less than the storage's (a prefill's 8-bit storage of codes widened from 6 bits, q6_K, or
// from 5, q5_0, q5_1 and q5_K).
template <int C, int G, int kBits, bool kMin, bool kLevels = false, bool kF32 = false,
          bool kHalves = false, bool kSuper = false, int kCodeBits = kBits>
KITE_VNNI void LegacyTile(const MatMulJob& job, const uint8_t* const (&groups)[G], int64_t t0,
                          float (&out)[C][G * kPackRows], int64_t prefetch) {
  constexpr int R = G * kVecs;
  const DF df;
  const DI di;
  const PackLayout& l = job.w->layout();
  const LevelTable table(kLevels ? l.levels : nullptr);
  // The offsets QuantizeActivations gave the activations count codes from the same centre.
  constexpr bool kCentred = CentredCodes(kCodeBits, kMin, kLevels);
  const int64_t k = job.w->cols();
  const int64_t blocks = k / kQK;
  const int64_t code_bytes = kPackRows * kQK * kBits / 8;
  // The block's bytes: the layout's for k-quants; from the template otherwise (WidenSuper and
  // Widen5 hand blocks over as 8-bit ones with f32 scales, which no layout describes).
  constexpr int kScaleBytes = kSuper ? 1 : kF32 ? 4 : 2;
  const int64_t block_bytes =
      kSuper ? l.block_bytes : code_bytes + kPackRows * kScaleBytes * (kMin || kHalves ? 2 : 1);
  // k-quants: l.BlockOffset(b) with the blocks a super-block holds known here (a shift, where
  // BlockOffset divides).
  constexpr int64_t kPerSuper = kQKK / kQK;
  const int64_t header_bytes = kSuper ? l.header_bytes : 0;
  const int64_t super_bytes = header_bytes + kPerSuper * block_bytes;
  const int8_t* act[C];
  const float* scale[C];
  const float* offset[C];
  for (int c = 0; c < C; ++c) {
    act[c] = job.qs + (t0 + c) * k;
    scale[c] = job.scale + (t0 + c) * blocks;
    offset[c] = job.offset + (t0 + c) * blocks * (kHalves ? 2 : 1);
  }
  VF acc[C][R];
  for (int c = 0; c < C; ++c)
    for (int v = 0; v < R; ++v) acc[c][v] = hn::Zero(df);
  VF d_super[R], neg_dmin_super[R];  // kSuper: this super-block's, per vector of rows
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t at = kSuper ? b / kPerSuper * super_bytes + header_bytes +
                                    b % kPerSuper * block_bytes
                              : b * block_bytes;
    const uint8_t* block[G];
    for (int g = 0; g < G; ++g) block[g] = groups[g] + at;
    if constexpr (kSuper) {
      if (b % kPerSuper == 0) {
        for (int v = 0; v < R; ++v) {
          const uint8_t* header = VecAt<G>(block, v, 2 * kLanes) - header_bytes;
          d_super[v] = LoadF16(header);
          if constexpr (kMin) neg_dmin_super[v] = LoadF16(header + 2 * kPackRows);
        }
      }
    }
    PrefetchAhead<G>(block, prefetch, block_bytes + (kSuper ? header_bytes : 0));
    VI dot[C][R];
    VI dot2[C][R];
    for (int c = 0; c < C; ++c)
      for (int v = 0; v < R; ++v) dot[c][v] = dot2[c][v] = hn::Zero(di);
    if constexpr (kBits == 6) {
      DotSubBlock6<C, G>(block, act, b * kQK, dot, kHalves ? dot2 : dot);
    } else if constexpr (kBits == 5) {
      DotSubBlock5<C, G>(block, act, b * kQK, dot);
    } else if constexpr (kHalves) {
      DotSubBlock<C, G, kBits, kLevels, kCodeBits, kCentred, false>(block, act, b * kQK, dot,
                                                                     dot2, table.biased);
    } else {  // one scale for the block: both halves into one chain (C·R chains are enough)
      DotSubBlock<C, G, kBits, kLevels, kCodeBits, kCentred, true>(block, act, b * kQK, dot,
                                                                    dot, table.biased);
    }
    for (int v = 0; v < R; ++v) {
      const uint8_t* tail = VecAt<G>(block, v, kScaleBytes * kLanes) + code_bytes;
      // The block's scale d, and its second: the min (kMin) or the second half's scale.
      const uint8_t* next = tail + kScaleBytes * kPackRows;
      VF d, second;
      if constexpr (kSuper) {
        d = hn::Mul(d_super[v], hn::ConvertTo(df, LoadI8AsI32(tail)));
        if constexpr (kMin) {
          second = hn::Mul(neg_dmin_super[v], hn::ConvertTo(df, LoadI8AsI32(next)));
        } else if constexpr (kHalves) {
          second = hn::Mul(d_super[v], hn::ConvertTo(df, LoadI8AsI32(next)));
        }
      } else {
        d = kF32 ? LoadF32(tail) : LoadF16(tail);
        if constexpr (kMin || kHalves) second = kF32 ? LoadF32(next) : LoadF16(next);
      }
      for (int c = 0; c < C; ++c) {
        const VF da = hn::Set(df, scale[c][b]);
        if constexpr (kHalves) {
          const VF off = hn::Set(df, offset[c][2 * b]);
          const VF off2 = hn::Set(df, offset[c][2 * b + 1]);
          acc[c][v] = hn::MulAdd(d, hn::MulSub(hn::ConvertTo(df, dot[c][v]), da, off), acc[c][v]);
          acc[c][v] =
              hn::MulAdd(second, hn::MulSub(hn::ConvertTo(df, dot2[c][v]), da, off2), acc[c][v]);
        } else if constexpr (kMin) {
          const VF off = hn::Set(df, offset[c][b]);
          acc[c][v] = hn::MulAdd(d, hn::Mul(hn::ConvertTo(df, dot[c][v]), da), acc[c][v]);
          acc[c][v] = hn::MulAdd(second, off, acc[c][v]);
        } else {
          const VF off = hn::Set(df, offset[c][b]);
          acc[c][v] = hn::MulAdd(d, hn::MulSub(hn::ConvertTo(df, dot[c][v]), da, off), acc[c][v]);
        }
      }
    }
  }
  for (int c = 0; c < C; ++c)
    for (int v = 0; v < R; ++v) hn::StoreU(acc[c][v], df, out[c] + v * kLanes);
}

template <int kBits, bool kMin, bool kLevels = false, bool kF32 = false, bool kHalves = false,
          bool kSuper = false, int kCodeBits = kBits>
struct Legacy {
  template <int C, int G>
  struct Tile {
    static void Run(const MatMulJob& job, const uint8_t* const (&g)[G], int64_t t0,
                    float (&o)[C][G * kPackRows], int64_t prefetch) {
      LegacyTile<C, G, kBits, kMin, kLevels, kF32, kHalves, kSuper, kCodeBits>(job, g, t0, o,
                                                                               prefetch);
    }
  };
};
// The k-quants' tiles (kSuper).
template <int kBits, bool kMin, bool kLevels = false, bool kHalves = false>
using Super = Legacy<kBits, kMin, kLevels, false, kHalves, true>;

// Codes packed narrower than 8 bits with their top bits apart (5 and 6 bits: q5_0, q5_1, q5_K,
// q6_K): decode and a few tokens (Groups' decode tiles) read them as packed (TilePacked); more
// tokens (a prefill on a CPU without AMX, or with --no-amx) first widen each PG groups' codes to
// the 8-bit layout (matmul_widen-inl.h), into this thread's scratch, and run TileWide on them,
// so that the unpacking is paid once per group, not once per tile of tokens.
// widen(codes, blocks, layout, dst): a group's K/32 blocks.
template <template <int, int> class TilePacked, template <int, int> class TileWide,
          int PG = kPrefillIntGroups, typename Widen>
void GroupsWidened(const MatMulJob& job, int64_t begin, int64_t end, Widen&& widen) {
  if (job.decode_tiles()) return Groups<4, TilePacked>(job, begin, end);
  const PackLayout& l = job.w->layout();
  const int64_t blocks = job.w->cols() / kQK;
  const int64_t wide_bytes = blocks * WideBlockBytes(l);
  thread_local std::vector<uint8_t> wide;
  wide.resize(PG * wide_bytes);
  return Groups<4, TileWide, PG>(job, begin, end, [&](int64_t g, int i) HWY_ATTR {
    uint8_t* dst = wide.data() + i * wide_bytes;
    widen(reinterpret_cast<const uint8_t*>(job.w->group(g)), blocks, l, dst);
    return static_cast<const uint8_t*>(dst);
  });
}
// The legacy 5-bit blocks.
template <template <int, int> class TilePacked, template <int, int> class TileWide>
void Groups5(const MatMulJob& job, int64_t begin, int64_t end) {
  GroupsWidened<TilePacked, TileWide>(job, begin, end, Widen5);
}
// The k-quants' super-blocks of kBits-bit codes (K/256 of them).
template <int kBits, template <int, int> class TilePacked, template <int, int> class TileWide>
void GroupsSuper(const MatMulJob& job, int64_t begin, int64_t end) {
  GroupsWidened<TilePacked, TileWide>(
      job, begin, end,
      [](const uint8_t* src, int64_t blocks, const PackLayout& l, uint8_t* dst)
          HWY_ATTR { WidenSuper<kBits>(src, blocks * kQK / kQKK, l, dst); });
}

void LegacyMatMulGroups(const MatMulJob& job, int64_t begin, int64_t end) {
  if (job.x_bf16 != nullptr) return IntegerAmxGroups(job, begin, end);
  switch (job.w->layout().kernel) {
    case PackKernel::kLegacy4:
      return Groups<4, Legacy<4, false>::Tile>(job, begin, end);
    case PackKernel::kLegacy4Min:
      return Groups<4, Legacy<4, true>::Tile>(job, begin, end);
    case PackKernel::kLegacy8:
      return Groups<4, Legacy<8, false>::Tile>(job, begin, end);
    case PackKernel::kLegacy8Min:
      return Groups<4, Legacy<8, true>::Tile>(job, begin, end);
    case PackKernel::kLegacy5:  // widened for a prefill to 8-bit storage under f32 scales
      return Groups5<Legacy<5, false>::Tile, Legacy<8, false, false, true, false, false, 5>::Tile>(
          job, begin, end);
    case PackKernel::kLegacy5Min:
      return Groups5<Legacy<5, true>::Tile, Legacy<8, true, false, true, false, false, 5>::Tile>(
          job, begin, end);
    case PackKernel::kLegacy4F32:
      return Groups<4, Legacy<4, false, false, true>::Tile>(job, begin, end);
    case PackKernel::kLegacy4MinF32:
      return Groups<4, Legacy<4, true, false, true>::Tile>(job, begin, end);
    case PackKernel::kLegacy8F32:
      return Groups<4, Legacy<8, false, false, true>::Tile>(job, begin, end);
    case PackKernel::kLegacy8MinF32:
      return Groups<4, Legacy<8, true, false, true>::Tile>(job, begin, end);
    case PackKernel::kLegacy4Halves:
      return Groups<4, Legacy<4, false, false, false, true>::Tile>(job, begin, end);
    case PackKernel::kLegacy4Levels:
      return Groups<4, Legacy<4, false, true>::Tile>(job, begin, end);
    case PackKernel::kSuper4Min:
      return Groups<4, Super<4, true>::Tile>(job, begin, end);
    case PackKernel::kSuper4Levels:
      return Groups<4, Super<4, false, true>::Tile>(job, begin, end);
    case PackKernel::kSuper5Min:  // widened for a prefill to 8-bit storage under f32 scales
      return GroupsSuper<5, Super<5, true>::Tile,
                         Legacy<8, true, false, true, false, false, 5>::Tile>(job, begin, end);
    case PackKernel::kSuper6Halves:
      return GroupsSuper<6, Super<6, false, false, true>::Tile,
                         Legacy<8, false, false, true, true, false, 6>::Tile>(job, begin, end);
    default:
      return;  // not a legacy layout: MatMulGroups sends only these here
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace kite::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kite::cpu {
HWY_EXPORT(LegacyMatMulGroups);
HWY_EXPORT(IntegerAmxKernels);
bool IntegerAmxCompiled() { return HWY_DYNAMIC_DISPATCH(IntegerAmxKernels)(); }
void LegacyMatMulGroups(const MatMulJob& job, int64_t begin, int64_t end) {
  HWY_DYNAMIC_DISPATCH(LegacyMatMulGroups)(job, begin, end);
}
}  // namespace kite::cpu
#endif  // HWY_ONCE
