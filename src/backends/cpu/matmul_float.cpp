// Matmul kernels of the float weight types (f32, f16, bf16; computed in f32, except a bf16
// prefill on CPUs with AVX512_BF16: matmul_bf16_pairs-inl.h, or AMX: matmul_bf16_amx-inl.h),
// compiled per SIMD target (Highway foreach_target) and dispatched at run time.
#include <cstring>
#include <type_traits>

#include <hwy/aligned_allocator.h>

// SSSE3/SSE4 machines fall back to the baseline target; skipping them halves the build time.
#define HWY_DISABLED_TARGETS (HWY_SSSE3 | HWY_SSE4)
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backends/cpu/matmul_float.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
// clang-format off: after highway.h, once per target
#include "backends/cpu/matmul_simd-inl.h"
#include "backends/cpu/matmul_bf16_pairs-inl.h"
#include "backends/cpu/matmul_bf16_amx-inl.h"
// clang-format on

#include "backends/cpu/amx.h"
#include "backends/cpu/matmul_kernels.h"

HWY_BEFORE_NAMESPACE();
namespace kite::cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Float weights: acc[c] += w[k] · x[c][k], w converted to f32 as loaded.
template <typename T>
HWY_INLINE VF LoadWeights(const uint8_t* p) {
  const DF df;
  if constexpr (std::is_same_v<T, float>) {
    return LoadF32(p);
  } else if constexpr (std::is_same_v<T, hwy::float16_t>) {
    return LoadF16(p);
  } else {
    const hn::Rebind<hwy::bfloat16_t, DF> db;
    return hn::PromoteTo(df, hn::LoadU(db, reinterpret_cast<const hwy::bfloat16_t*>(p)));
  }
}

// Accumulators a float tile of R vectors a token keeps for each: with fewer than 8 independent
// FMA chains their latency would bound the loop. A token's sum depends on U only, so a batched
// step (several tokens, each its own sequence) takes the U of the decode tile of the same
// groups and each row gets the bits of its decode step alone.
constexpr int FloatChains(int vectors) { return vectors >= 8 ? 1 : 8 / vectors; }

// out[c][v·kLanes + r] += Σ_{k0 <= i < k1} w[i] · x[c][i] over the vectors of a C x G tile, the
// groups' weights starting at k = w_first: U consecutive k feed U separate accumulators (summed
// at the end, in order). `prefetch`: bytes ahead of each group to prefetch (weights streaming
// from memory; 0 for the converted blocks of a prefill, already in L1).
template <int C, int G, typename T, int U = FloatChains(C * G * kVecs)>
void FloatTile(const MatMulJob& job, const uint8_t* const (&groups)[G], int64_t w_first, int64_t t0,
               int64_t k0, int64_t k1, float (&out)[C][G * kPackRows], int64_t prefetch = 0) {
  constexpr int R = G * kVecs;
  const DF df;
  const float* x[C];
  for (int c = 0; c < C; ++c) x[c] = job.x + (t0 + c) * job.x_stride;
  VF acc[U][C][R];
  for (int u = 0; u < U; ++u)
    for (int c = 0; c < C; ++c)
      for (int v = 0; v < R; ++v) {
        acc[u][c][v] = u == 0 ? hn::LoadU(df, out[c] + v * kLanes) : hn::Zero(df);
      }
  // Inlined by force: ASan makes it too large for the inliner, and called it leaves `acc` in
  // memory (the sanitizer build's prefill was 3x slower for it).
  auto step = [&](int u, int64_t i) HWY_ATTR __attribute__((always_inline)) {
    VF w[R];
    for (int v = 0; v < R; ++v) {
      w[v] = LoadWeights<T>(VecAt<G>(groups, v, kLanes * sizeof(T)) +
                            (i - w_first) * kPackRows * sizeof(T));
    }
    for (int c = 0; c < C; ++c) {
      const VF xv = hn::Set(df, x[c][i]);
      for (int v = 0; v < R; ++v) acc[u][c][v] = hn::MulAdd(w[v], xv, acc[u][c][v]);
    }
  };
  int64_t i = k0;
  constexpr int64_t kStepBytes = U * kPackRows * sizeof(T);  // of each group per iteration
  for (; i + U <= k1; i += U) {
    if (prefetch != 0) {
      const uint8_t* at[G];
      for (int g = 0; g < G; ++g) at[g] = groups[g] + (i - w_first) * kPackRows * sizeof(T);
      PrefetchAhead<G>(at, prefetch, kStepBytes);
    }
    for (int u = 0; u < U; ++u) step(u, i + u);
  }
  for (; i < k1; ++i) step(0, i);
  for (int c = 0; c < C; ++c) {
    for (int v = 0; v < R; ++v) {
      for (int u = 1; u < U; ++u) acc[0][c][v] = hn::Add(acc[0][c][v], acc[u][c][v]);
      hn::StoreU(acc[0][c][v], df, out[c] + v * kLanes);
    }
  }
}

// Tokens a batched float step runs in one tile over the groups of a decode tile: 2 with one
// vector a group (AVX-512: 16 accumulators), else 1 (the registers hold no more).
constexpr int kBatchTokens = kVecs == 1 ? 2 : 1;

// Where a batched step's tile over the decode tile's groups holds one token (kBatchTokens 1),
// a step of at least GroupTokens(U) tokens takes the groups one at a time instead, that many
// tokens a tile (as many as 8 accumulators hold with the decode tile's U chains), so that each
// weight vector is loaded and converted once for them, not once a token. AVX2, 4 groups: U 1,
// 4 tokens; 2 groups: U 2, 2 tokens. (With fewer tokens one group's stream alone read slower:
// 135M F16, 2 sessions, 202 -> 184 t/s.)
constexpr int GroupTokens(int chains) {
  return kBatchTokens == 1 ? std::max(1, 8 / (kVecs * chains)) : 1;
}

// Tokens [0, job.tokens) over `groups` groups from g, `stride` apart, one group at a time:
// tiles of GroupTokens(U), then 2, then 1 tokens, with U chains.
template <typename T, int U>
HWY_INLINE void OneGroupAtATime(const MatMulJob& job, int64_t g, int64_t stride, int groups) {
  for (int i = 0; i < groups; ++i) {
    const uint8_t* group[1];
    TileGroups(job, g + i * stride, 0, group);
    auto tile = [&]<int C>(int64_t t0) HWY_ATTR {
      float out[C][kPackRows] = {};
      FloatTile<C, 1, T, U>(job, group, 0, t0, 0, job.w->cols(), out, job.tile.prefetch);
      for (int c = 0; c < C; ++c) StoreRows(job, t0 + c, g + i * stride, out[c]);
    };
    int64_t t = 0;
    for (; t + GroupTokens(U) <= job.tokens; t += GroupTokens(U)) {
      tile.template operator()<GroupTokens(U)>(t);
    }
    for (; t + 2 <= job.tokens; t += 2) tile.template operator()<2>(t);
    for (; t < job.tokens; ++t) tile.template operator()<1>(t);
  }
}

// Fewer than kStreamTokens tokens (a batched decode step, a short prefill chunk): the groups of
// each decode tile (DecodeTiles, as a decode step takes them), their weights read from memory
// once and from cache by every tile of kBatchTokens, then 1, tokens (or OneGroupAtATime); each
// with the decode tile's chains U, so every token's row has the bits of T = 1.
template <typename T>
void FloatGroupsFew(const MatMulJob& job, int64_t begin, int64_t end) {
  const int64_t k = job.w->cols();
  auto over = [&]<int NG>(int64_t g, int64_t stride) HWY_ATTR {
    constexpr int U = FloatChains(NG * kVecs);
    if constexpr (GroupTokens(U) > 1) {
      if (job.tokens >= GroupTokens(U)) return OneGroupAtATime<T, U>(job, g, stride, NG);
    }
    const uint8_t* groups[NG];
    TileGroups(job, g, stride, groups);
    auto tile = [&]<int C>(int64_t t0) HWY_ATTR {
      float out[C][NG * kPackRows] = {};
      FloatTile<C, NG, T, U>(job, groups, 0, t0, 0, k, out, job.tile.prefetch);
      for (int c = 0; c < C; ++c) StoreTile<NG>(job, t0 + c, g, stride, out[c]);
    };
    int64_t t = 0;
    for (; t + kBatchTokens <= job.tokens; t += kBatchTokens)
      tile.template operator()<kBatchTokens>(t);
    for (; t < job.tokens; ++t) tile.template operator()<1>(t);
  };
  WithStreams(job, [&]<int G>() HWY_ATTR { DecodeTiles<G>(begin, end, over); });
}

// Float weights. Whole tiles of C tokens are blocked over K: the thread's groups pass over a
// block of x [T, kBlock], PG groups at a time, their block of weights converted to f32 once (192
// KB, in L2) for all the token tiles; partial sums wait in `out`. Blocks of 1024 rather than
// 256 (whose weights fit L1): a tile's setup and stores then weigh a quarter as much, and a 1B
// f16 prefill's matmuls took 10.9 instead of 12.9 ms a token (1 thread, Zen 5). The tokens
// left over (all of them in a decode step: nothing to reuse) take K whole, one at a time over
// the job's streams of groups at once, the weights streaming in order.
template <int C, int PG, typename T>
void FloatGroups(const MatMulJob& job, int64_t begin, int64_t end) {
  if (job.tokens > 1 && !job.prefill()) return FloatGroupsFew<T>(job, begin, end);
  if (job.x_bf16 != nullptr) {
    if (!job.amx) return Bf16PairGroups(job, begin, end);
    if constexpr (std::is_same_v<T, hwy::float16_t>) return F16AmxGroups(job, begin, end);
    return Bf16AmxGroups(job, begin, end);
  }
  constexpr int64_t kBlock = 1024;
  const DF df;
  const int64_t k = job.w->cols();
  const int64_t whole = job.tokens / C * C;
  thread_local const auto converted = hwy::AllocateAligned<float>(PG * kBlock * kPackRows);
  // One pass of the token tiles over NG (PG or 1) groups from g, for k in [k0, k1).
  auto tiles = [&]<int NG>(int64_t g, int64_t k0, int64_t k1) HWY_ATTR {
    const uint8_t* groups[NG];
    for (int i = 0; i < NG; ++i) {
      const auto* src = reinterpret_cast<const uint8_t*>(job.w->group(g + i));
      for (int64_t kk = k0; kk < k1; ++kk) {
        for (size_t v = 0; v < kPackRows; v += kLanes) {
          hn::Store(LoadWeights<T>(src + (kk * kPackRows + v) * sizeof(T)), df,
                    converted.get() + (i * kBlock + kk - k0) * kPackRows + v);
        }
      }
      groups[i] = reinterpret_cast<const uint8_t*>(converted.get() + i * kBlock * kPackRows);
    }
    for (int64_t t0 = 0; t0 < whole; t0 += C) {
      BlockedTile<C, NG>(job, t0, g, k0, k1, [&](float(&sums)[C][NG * kPackRows]) HWY_ATTR {
        FloatTile<C, NG, float>(job, groups, k0, t0, k0, k1, sums);
      });
    }
  };
  for (int64_t k0 = 0; whole > 0 && k0 < k; k0 += kBlock) {
    const int64_t k1 = std::min(k, k0 + kBlock);
    PrefillGroups<PG>(begin, end, [&]<int NG>(int64_t g) HWY_ATTR {
      tiles.template operator()<NG>(g, k0, k1);
    });
  }
  TokensOverGroups(
      job, whole, begin, end,
      [&]<int NG>(const uint8_t* const(&groups)[NG], int64_t t, float(&out)[1][NG * kPackRows])
          HWY_ATTR { FloatTile<1, NG, T>(job, groups, 0, t, 0, k, out, job.tile.prefetch); });
}

// Groups a float prefill tile covers: 3 with AVX-512 (one vector a group), else 1.
constexpr int kPrefillGroups = std::max(1, 3 / kVecs);
// Tokens of a float prefill tile, so that its accumulators, weight vectors and a broadcast fit
// the registers: AVX-512, 8 tokens x 3 groups (24 + 3 + 1 of 32 registers; 3 weight loads and 8
// broadcasts per 24 FMAs); AVX2, 6 tokens x 2 vectors (12 + 2 + 1 of 16: 8 tokens needed 19,
// and F16 prefill ran 1.6x slower on a Zen 3); NEON, 6 x 4 (24 + 4 + 1 of 32).
constexpr int kPrefillTokens = kVecs == 1 ? 8 : 6;

void FloatMatMulGroups(const MatMulJob& job, int64_t begin, int64_t end) {
  switch (job.w->layout().kernel) {
    case PackKernel::kF32:
      return FloatGroups<kPrefillTokens, kPrefillGroups, float>(job, begin, end);
    case PackKernel::kF16:
      return FloatGroups<kPrefillTokens, kPrefillGroups, hwy::float16_t>(job, begin, end);
    case PackKernel::kBF16:
      return FloatGroups<kPrefillTokens, kPrefillGroups, hwy::bfloat16_t>(job, begin, end);
    default:
      return;  // not a float layout: MatMulGroups sends only these here
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace kite::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kite::cpu {
HWY_EXPORT(FloatMatMulGroups);
HWY_EXPORT(Bf16PairsSupported);
HWY_EXPORT(RoundRowsToBf16);
HWY_EXPORT(RoundRowsToBf16Padded);

void FloatMatMulGroups(const MatMulJob& job, int64_t begin, int64_t end) {
  HWY_DYNAMIC_DISPATCH(FloatMatMulGroups)(job, begin, end);
}

bool UsesBf16Pairs(const PackLayout& layout, int64_t tokens, int64_t k) {
  static const bool supported = HWY_DYNAMIC_DISPATCH(Bf16PairsSupported)();
  return supported && layout.kernel == PackKernel::kBF16 && tokens >= kStreamTokens && k % 2 == 0;
}

bool UsesAmxForF16(const PackLayout& layout, int64_t tokens, int64_t k) {
  static const bool supported = HWY_DYNAMIC_DISPATCH(Bf16PairsSupported)();
  return supported && layout.kernel == PackKernel::kF16 && tokens >= kStreamTokens &&
         k % 2 == 0 && UseAmxBf16();
}

void RoundActivationsToBf16(const MatMulJob& job, int64_t begin, int64_t end) {
  if (job.amx) return HWY_DYNAMIC_DISPATCH(RoundRowsToBf16Padded)(job, begin, end);
  HWY_DYNAMIC_DISPATCH(RoundRowsToBf16)(job, begin, end);
}
}  // namespace kite::cpu
#endif  // HWY_ONCE
