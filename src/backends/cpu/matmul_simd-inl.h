// What the matmul kernel families (matmul_float.cpp, matmul_legacy.cpp) share, compiled once per
// SIMD target: vector types, loads of the packed layout (packed_matrix.h), storing a tile's rows,
// and the loops that walk a decode step's row groups with the tile shape the CPU was given
// (tile_shape.h).
// Included after hwy/highway.h by a foreach_target file: the guard toggles once per target.
#if defined(KITE_BACKENDS_CPU_MATMUL_SIMD_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef KITE_BACKENDS_CPU_MATMUL_SIMD_INL_H_
#undef KITE_BACKENDS_CPU_MATMUL_SIMD_INL_H_
#else
#define KITE_BACKENDS_CPU_MATMUL_SIMD_INL_H_
#endif

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <type_traits>

#include <hwy/cache_control.h>
#include <hwy/highway.h>

#include "backends/cpu/matmul_kernels.h"

HWY_BEFORE_NAMESPACE();
namespace kite::cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;
using DI = hn::ScalableTag<int32_t>;
using VF = hn::Vec<DF>;
using VI = hn::Vec<DI>;
constexpr size_t kLanes = hn::MaxLanes(DI());
constexpr int kVecs = static_cast<int>(kPackRows / kLanes);  // vectors per 16-row group
static_assert(kPackRows % kLanes == 0, "a row group must be whole vectors");
// The most groups a decode tile reads side by side: 8 vectors of accumulators (with their
// partial sums, ~24 registers) is what the register file holds on every target.
constexpr int kMaxStreams = std::max(1, 8 / kVecs);

HWY_INLINE VF LoadF16(const uint8_t* p) {
  const DF df;
  const hn::Rebind<hwy::float16_t, DF> dh;
  return hn::PromoteTo(df, hn::LoadU(dh, reinterpret_cast<const hwy::float16_t*>(p)));
}
HWY_INLINE VF LoadF32(const uint8_t* p) {
  return hn::LoadU(DF(), reinterpret_cast<const float*>(p));
}

// A tile is C tokens x G row groups: vector v (of R = G·kVecs) holds the kLanes rows at
// kLanes·(v % kVecs) of group v / kVecs. Groups read side by side are separate memory streams,
// which a core's prefetchers fetch faster than one, and independent accumulator chains.
template <int G>
HWY_INLINE const uint8_t* VecAt(const uint8_t* const (&at)[G], int v, int64_t vec_bytes) {
  return at[v / kVecs] + vec_bytes * (v % kVecs);
}

// Software prefetch of `bytes` at `distance` bytes ahead of each of the G streams (a tile
// shape's prefetch; none when distance is 0), one request per cache line.
template <int G>
HWY_INLINE void PrefetchAhead(const uint8_t* const (&at)[G], int64_t distance, int64_t bytes) {
  if (distance == 0) return;
  for (int g = 0; g < G; ++g) {
    for (int64_t off = 0; off < bytes; off += 64) hwy::Prefetch(at[g] + distance + off);
  }
}

// Stores a tile's outputs for token t, group g (its valid rows), adding the bias.
HWY_INLINE void StoreRows(const MatMulJob& job, int64_t t, int64_t g, const float* tile) {
  const int64_t n = job.w->rows();
  const int64_t rows = std::min<int64_t>(kPackRows, n - g * kPackRows);
  float* dst = job.out + t * n + g * kPackRows;
  for (int64_t r = 0; r < rows; ++r) {
    dst[r] = tile[r] + (job.bias ? job.bias[g * kPackRows + r] : 0.0f);
  }
}

// The packed weights of a tile's NG groups g, g + stride, ... (stride 1: neighbours; a decode
// tile's stride: DecodeTiles).
template <int NG>
HWY_INLINE void TileGroups(const MatMulJob& job, int64_t g, int64_t stride,
                           const uint8_t* (&groups)[NG]) {
  for (int i = 0; i < NG; ++i) {
    groups[i] = reinterpret_cast<const uint8_t*>(job.w->group(g + i * stride));
  }
}

// Stores token t's outputs of that tile (`tile`: NG groups of kPackRows) with the bias.
template <int NG>
HWY_INLINE void StoreTile(const MatMulJob& job, int64_t t, int64_t g, int64_t stride,
                          const float* tile) {
  for (int i = 0; i < NG; ++i) StoreRows(job, t, g + i * stride, tile + i * kPackRows);
}

// One tile of a prefill blocked over K (matmul_float.cpp, matmul_bf16_pairs-inl.h): C tokens
// from t0 by NG groups from g, for k in [k0, k1). Its sums start from zero, or from the partial
// sums an earlier block left in job.out; compute(sums) adds the block's products; they go back
// to job.out, as the outputs (with the bias) after K's last block, else as partial sums.
template <int C, int NG, typename Compute>
HWY_INLINE void BlockedTile(const MatMulJob& job, int64_t t0, int64_t g, int64_t k0, int64_t k1,
                            Compute&& compute) {
  const int64_t n = job.w->rows();
  float sums[C][NG * kPackRows] = {};
  auto partial = [&](int c, int i) { return job.out + (t0 + c) * n + (g + i) * kPackRows; };
  auto rows = [&](int i) { return std::min<int64_t>(kPackRows, n - (g + i) * kPackRows) * 4; };
  for (int c = 0; k0 > 0 && c < C; ++c) {
    for (int i = 0; i < NG; ++i) std::memcpy(sums[c] + i * kPackRows, partial(c, i), rows(i));
  }
  compute(sums);
  for (int c = 0; c < C; ++c) {
    for (int i = 0; i < NG; ++i) {
      if (k1 == job.w->cols()) {
        StoreRows(job, t0 + c, g + i, sums[c] + i * kPackRows);
      } else {
        std::memcpy(partial(c, i), sums[c] + i * kPackRows, rows(i));
      }
    }
  }
}

// Calls tiles.template operator()<NG>(g) over the groups [begin, end) of a prefill's block: PG
// at a time, then (PG > 2) two where they fit, then singles — one group alone is bound by its
// broadcasts.
template <int PG, typename Tiles>
HWY_INLINE void PrefillGroups(int64_t begin, int64_t end, Tiles&& tiles) {
  int64_t g = begin;
  for (; g + PG <= end; g += PG) tiles.template operator()<PG>(g);
  if constexpr (PG > 2) {
    if (g + 2 <= end) tiles.template operator()<2>(g), g += 2;
  }
  for (; g < end; ++g) tiles.template operator()<1>(g);
}

// Calls fn.template operator()<G>() with G = the job's decode streams (1, 2, 4 or 8, at most
// kMaxStreams): the tile shape is the CPU's, chosen at run time, so each is instantiated.
template <typename Fn>
HWY_INLINE void WithStreams(const MatMulJob& job, Fn&& fn) {
  const int streams = std::min(job.tile.streams, kMaxStreams);
  if (streams >= 8 && kMaxStreams >= 8) return fn.template operator()<std::min(8, kMaxStreams)>();
  if (streams >= 4 && kMaxStreams >= 4) return fn.template operator()<std::min(4, kMaxStreams)>();
  if (streams >= 2 && kMaxStreams >= 2) return fn.template operator()<std::min(2, kMaxStreams)>();
  return fn.template operator()<1>();
}

// Calls fn.template operator()<NG>(g, stride) for the decode tiles over groups [begin, end): G
// groups at a time, g, g + stride, ..., then the groups left over singly (NG 1, stride 0). A
// tile's G groups are the G quarters (for G = 4) of the range, not G neighbours, so stream i of
// the next tile starts where stream i of this one ended: each stream runs on through the whole
// range in order, as the hardware prefetchers (and the software prefetch past a group's end)
// want, instead of jumping G groups ahead after every tile. 1B decode, Zen 5, 2 threads: 3-16%
// more tokens/s by type (README, "Decode GEMV"). The groups in G-tiles and in singles are the
// same as with neighbours, so every row keeps its bits.
template <int G, typename Fn>
HWY_INLINE void DecodeTiles(int64_t begin, int64_t end, Fn&& fn) {
  const int64_t tiles = (end - begin) / G;
  for (int64_t j = 0; j < tiles; ++j) fn.template operator()<G>(begin + j, tiles);
  for (int64_t g = begin + tiles * G; g < end; ++g) fn.template operator()<1>(g, 0);
}

// Tokens [first, job.tokens) one at a time over the job's decode tiles (DecodeTiles):
// tile.template operator()<NG>(groups, t, out) adds token t's products with NG groups to `out`
// (zeroed here), which is then stored with the bias.
template <typename TileFn>
HWY_INLINE void TokensOverGroups(const MatMulJob& job, int64_t first, int64_t begin, int64_t end,
                                 TileFn&& tile) {
  auto run = [&]<int NG>(int64_t t, int64_t g, int64_t stride) HWY_ATTR {
    const uint8_t* groups[NG];
    TileGroups(job, g, stride, groups);
    float out[1][NG * kPackRows] = {};
    tile.template operator()<NG>(groups, t, out);
    StoreTile<NG>(job, t, g, stride, out[0]);
  };
  WithStreams(job, [&]<int G>() HWY_ATTR {
    for (int64_t t = first; t < job.tokens; ++t) {
      DecodeTiles<G>(begin, end, [&]<int NG>(int64_t g, int64_t stride)
                                     HWY_ATTR { run.template operator()<NG>(t, g, stride); });
    }
  });
}

// Runs Tile over groups [begin, end) for every token of an integer matmul. Fewer than
// kFewIntTokens (matmul_kernels.h) tokens (a decode step, a batched one, a speculative
// verification pass, a short prompt chunk) take the job's decode tiles (DecodeTiles), their
// weights streamed with the tile's software prefetch by the first tile of tokens and read
// again from cache by the rest:
// kFewTokens at a time (as many as the accumulators hold beside G streams), then 1.
// More take PG groups at a time (2 vectors of rows), their weights read from memory once and
// from L1 by every tile: C tokens, then 2, then 1. Two vectors of rows, so that each activation
// broadcast (a load) feeds two dot products: with one, the broadcasts bound the tile before the
// VNNI units do. Integer dot products are exact and each token's float steps are the same in
// every tile, so a token's row has the same bits for any T and any tile shape (a prefill on AMX
// takes other kernels: UsesAmxForIntegers).
// Tile<NC, NG>::Run(job, groups, t0, out, prefetch) computes NC tokens from t0 over NG groups,
// with software prefetch `prefetch` bytes ahead (0: none, the weights being in cache).
// `group_at`(g, i), when given, supplies the codes the PG-group tiles read for group g (slot i
// of PG) instead of the packed group (GroupsWidened, matmul_legacy.cpp).
constexpr int kPrefillIntGroups = std::max(1, 2 / kVecs);
template <template <int, int> class Tile>
HWY_INLINE void FewTokensOverGroups(const MatMulJob& job, int64_t begin, int64_t end) {
  WithStreams(job, [&]<int G>() HWY_ATTR {
    constexpr int kFewTokens = std::max(1, kMaxStreams / G);
    DecodeTiles<G>(begin, end, [&]<int NG>(int64_t g, int64_t stride) HWY_ATTR {
      const uint8_t* groups[NG];
      TileGroups(job, g, stride, groups);
      auto tile = [&]<int NC>(int64_t t0) HWY_ATTR {
        float out[NC][NG * kPackRows];
        Tile<NC, NG>::Run(job, groups, t0, out, t0 == 0 ? job.tile.prefetch : 0);
        for (int c = 0; c < NC; ++c) StoreTile<NG>(job, t0 + c, g, stride, out[c]);
      };
      int64_t t = 0;
      for (; t + kFewTokens <= job.tokens; t += kFewTokens) {
        tile.template operator()<kFewTokens>(t);
      }
      for (; t < job.tokens; ++t) tile.template operator()<1>(t);
    });
  });
}
template <int C, template <int, int> class Tile, int PG = kPrefillIntGroups,
          typename GroupAt = std::nullptr_t>
void Groups(const MatMulJob& job, int64_t begin, int64_t end, GroupAt group_at = nullptr) {
  if (job.decode_tiles()) return FewTokensOverGroups<Tile>(job, begin, end);
  auto over = [&]<int NG>(int64_t g) HWY_ATTR {
    const uint8_t* groups[NG];
    if constexpr (std::is_same_v<GroupAt, std::nullptr_t>) {
      TileGroups(job, g, 1, groups);
    } else {
      for (int i = 0; i < NG; ++i) groups[i] = group_at(g + i, i);
    }
    auto tile = [&]<int NC>(int64_t t0) HWY_ATTR {
      float out[NC][NG * kPackRows];
      Tile<NC, NG>::Run(job, groups, t0, out, 0);
      for (int c = 0; c < NC; ++c) StoreTile<NG>(job, t0 + c, g, 1, out[c]);
    };
    int64_t t = 0;
    for (; t + C <= job.tokens; t += C) tile.template operator()<C>(t);
    for (; t + 2 <= job.tokens; t += 2) tile.template operator()<2>(t);
    for (; t < job.tokens; ++t) tile.template operator()<1>(t);
  };
  int64_t g = begin;
  for (; g + PG <= end; g += PG) over.template operator()<PG>(g);
  for (; g < end; ++g) over.template operator()<1>(g);
}

}  // namespace HWY_NAMESPACE
}  // namespace kite::cpu
HWY_AFTER_NAMESPACE();

#endif  // KITE_BACKENDS_CPU_MATMUL_SIMD_INL_H_
