// Causal grouped-query attention over the paged KV cache (a sliding window and a score soft-cap
// when the node asks), read in place (f16, f32 or q8_0 pages),
// with an online softmax over tiles of cached positions: scores of a tile, one vectorized exp, the
// running max and sum rescaled, values accumulated in f32. A q8_0 head is head_dim / 32 blocks:
// its int8 codes widen to f32 and each block's f16 scale multiplies once per block (a key's
// partial dot, a value's softmax weight), as the blocks are read.
//   decode (one token): each query head alone, its keys read straight from the pages;
//   prefill: the query rows sharing a KV head in blocks of one or two vectors of rows, one SIMD
//   lane a row (AttendRows), each tile converted to f32 once for the whole block.
// The threads take work units one at a time from a shared counter, which balances causal prefill
// (later rows attend to more positions) and a thread that shares its core with another process.
#include <cmath>
#include <cstddef>
#include <cstring>
#include <limits>
#include <string>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backends/cpu/attention.cpp"
#define HWY_DISABLED_TARGETS (HWY_SSSE3 | HWY_SSE4)
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
// clang-format off: after highway.h, once per target
#include <hwy/contrib/math/math-inl.h>
// clang-format on

#include "backends/cpu/f16_rows.h"
#include "backends/cpu/kernels.h"
#include "backends/shared_kernels.h"
#include "tensor/quant_blocks.h"
#include "tensor/quantize.h"

#ifndef KITE_CPU_ATTENTION_ONCE
#define KITE_CPU_ATTENTION_ONCE
namespace kite::cpu {
// Largest head size the kernel keeps on the stack.
inline constexpr int64_t kMaxHeadDim = 512;
// Cached positions per online-softmax tile: of one query head in decode, of a block of rows in
// prefill. A prefill tile's keys and values in f32 (8 KB each at head size 64) sit in L1 beside
// the block's scores, accumulators and transposed queries; tiles of 64 left them 56 KB there and
// ran 4% slower on a Xeon with 48 KB of L1.
inline constexpr int64_t kTile = 64;
inline constexpr int64_t kBlockTile = 32;
// Largest head size of the prefill kernel (its tiles live on the stack); larger heads take the
// one-row kernel.
inline constexpr int64_t kMaxBlockDim = 256;
// Query rows that share a KV head, attended together in prefill: one SIMD lane each, up to two
// vectors of them.
inline constexpr int64_t kMaxRows = 32;
// The rows of positions j0 .. j0 + count (their keys', or values', head at head_offset), with one
// division for the tile where layer.key(p) takes one a position.
inline void TileRows(const KvLayerView& layer, bool values, int64_t j0, int64_t count,
                     int64_t head_offset, const std::byte** rows) {
  const int64_t row_bytes = static_cast<int64_t>(layer.row_bytes());
  const int64_t at = (values ? layer.page_size * row_bytes : 0) + head_offset;
  int64_t page = j0 / layer.page_size, slot = j0 % layer.page_size;
  for (int64_t j = 0; j < count; ++j) {
    rows[j] = layer.pages[page] + slot * row_bytes + at;
    if (++slot == layer.page_size) {
      slot = 0;
      ++page;
    }
  }
}
struct QueryRows {
  int64_t count = 0;         // <= kMaxRows
  const float* q[kMaxRows];  // query row [D]
  float* out[kMaxRows];      // output row [D]
  int64_t first[kMaxRows];   // the first position each row sees (0, or its window's start)
  int64_t last[kMaxRows];    // the last position each row sees (causal)
};
}  // namespace kite::cpu
#endif

HWY_BEFORE_NAMESPACE();
namespace kite::cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;

// Reading one head [D] of a cache row, `head` pointing at its first byte. T is the stored type:
// float, hwy::float16_t, or BlockQ8_0. A head is blocks of BlockOf<T> elements (the whole head
// for the float types); BlockAt gives block b's first byte, Codes a vector of its elements from
// c (a multiple of the lanes) before the block's Scale (q8_0 only).
template <typename T>
constexpr bool kQ8 = std::is_same_v<T, BlockQ8_0>;

template <typename T>
HWY_INLINE int64_t BlockOf(int64_t dim) {
  return kQ8<T> ? kQK : dim;
}

template <typename T>
HWY_INLINE const std::byte* BlockAt(const std::byte* head, int64_t b) {
  return kQ8<T> ? head + b * static_cast<int64_t>(sizeof(BlockQ8_0)) : head;
}

template <typename T>
HWY_INLINE hn::Vec<DF> Codes(const std::byte* block, int64_t c) {
  const DF df;
  if constexpr (std::is_same_v<T, float>) {
    return hn::LoadU(df, reinterpret_cast<const float*>(block) + c);
  } else if constexpr (std::is_same_v<T, hwy::float16_t>) {
    const hn::Rebind<hwy::float16_t, DF> dh;
    return hn::PromoteTo(df, hn::LoadU(dh, reinterpret_cast<const hwy::float16_t*>(block) + c));
  } else {
    const hn::Rebind<int32_t, DF> di;
    const hn::Rebind<int8_t, DF> d8;
    const auto* codes = reinterpret_cast<const int8_t*>(block + offsetof(BlockQ8_0, qs)) + c;
    return hn::ConvertTo(df, hn::PromoteTo(di, hn::LoadU(d8, codes)));
  }
}

// A q8_0 block's scale, converted by the target's f16 conversion in one lane (branch-free): it
// runs once a block of every key and value read.
HWY_INLINE float Scale(const std::byte* block) {
  const hn::CappedTag<float, 1> d1;
  const hn::Rebind<hwy::float16_t, decltype(d1)> dh1;
  const auto* d = reinterpret_cast<const hwy::float16_t*>(block + offsetof(BlockQ8_0, d));
  return hn::GetLane(hn::PromoteTo(d1, hn::LoadU(dh1, d)));
}

// out [D] = softmax over j in [first, last] of s_j = scale · q·k_j (softcap · tanh(s_j / softcap)
// when softcap > 0), applied to v_j, for one query head.
template <typename T>
void AttendHead(const float* q, const KvLayerView& layer, int64_t kv_head, int64_t first,
                int64_t last, float scale, float softcap, float* out) {
  const DF df;
  const int64_t dim = layer.head_dim;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  const int64_t block = BlockOf<T>(dim);
  const int64_t blocks = dim / block;
  const int64_t head_offset = kv_head * static_cast<int64_t>(layer.head_bytes);
  HWY_ALIGN float acc[kMaxHeadDim];
  HWY_ALIGN float p[kTile];
  // The weight of each value block: p[j], times the block's scale for q8_0 [blocks][tile].
  HWY_ALIGN float weights[kQ8<T> ? kTile * kMaxHeadDim / kQK : 1];
  const std::byte* keys[kTile];    // the tile's heads, looked up in the page table once
  const std::byte* values[kTile];
  for (int64_t i = 0; i < dim; i += lanes) hn::Store(hn::Zero(df), df, acc + i);
  float max = -INFINITY;
  float sum = 0.0f;
  for (int64_t j0 = first; j0 <= last; j0 += kTile) {
    const int64_t count = std::min(kTile, last + 1 - j0);
    TileRows(layer, false, j0, count, head_offset, keys);
    TileRows(layer, true, j0, count, head_offset, values);
    float tile_max = -INFINITY;
    for (int64_t j = 0; j < count; ++j) {
      auto dot = hn::Zero(df);
      for (int64_t b = 0; b < blocks; ++b) {
        const std::byte* key = BlockAt<T>(keys[j], b);
        const float* qb = q + b * block;
        auto part = hn::Zero(df);
        for (int64_t c = 0; c < block; c += lanes) {
          part = hn::MulAdd(hn::LoadU(df, qb + c), Codes<T>(key, c), part);
        }
        if constexpr (kQ8<T>) {
          dot = hn::MulAdd(hn::Set(df, Scale(key)), part, dot);
        } else {
          dot = part;
        }
      }
      p[j] = scale * hn::GetLane(hn::SumOfLanes(df, dot));
      if (softcap > 0.0f) p[j] = softcap * std::tanh(p[j] / softcap);
      tile_max = std::max(tile_max, p[j]);
    }
    for (int64_t j = count; j % lanes != 0; ++j) p[j] = 0.0f;  // lanes past the tile's end
    const float new_max = std::max(max, tile_max);
    const float correction = std::exp(max - new_max);  // 0 on the first tile
    max = new_max;
    auto tile_sum = hn::Zero(df);
    for (int64_t j = 0; j < count; j += lanes) {
      const auto e = hn::Exp(df, hn::Sub(hn::Load(df, p + j), hn::Set(df, max)));
      hn::Store(e, df, p + j);
      const size_t valid = static_cast<size_t>(std::min(lanes, count - j));
      tile_sum = hn::Add(tile_sum, hn::IfThenElseZero(hn::FirstN(df, valid), e));
    }
    sum = sum * correction + hn::GetLane(hn::SumOfLanes(df, tile_sum));
    const float* w = p;
    if constexpr (kQ8<T>) {
      for (int64_t b = 0; b < blocks; ++b) {
        for (int64_t j = 0; j < count; ++j) {
          weights[b * kTile + j] = p[j] * Scale(BlockAt<T>(values[j], b));
        }
      }
      w = weights;
    }
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t at = b * block;
      for (int64_t c = 0; c < block; c += lanes) {
        auto a = hn::Mul(hn::Load(df, acc + at + c), hn::Set(df, correction));
        for (int64_t j = 0; j < count; ++j) {
          const float weight = kQ8<T> ? w[b * kTile + j] : w[j];
          a = hn::MulAdd(hn::Set(df, weight), Codes<T>(BlockAt<T>(values[j], b), c), a);
        }
        hn::Store(a, df, acc + at + c);
      }
    }
  }
  const auto inv = hn::Set(df, 1.0f / sum);
  for (int64_t i = 0; i < dim; i += lanes)
    hn::StoreU(hn::Mul(hn::Load(df, acc + i), inv), df, out + i);
}

void Attend(const float* q, const KvLayerView& layer, int64_t kv_head, int64_t first, int64_t last,
            float scale, float softcap, float* out) {
  if (layer.dtype == DType::kF16) {
    AttendHead<hwy::float16_t>(q, layer, kv_head, first, last, scale, softcap, out);
  } else if (layer.dtype == DType::kQ8_0) {
    AttendHead<BlockQ8_0>(q, layer, kv_head, first, last, scale, softcap, out);
  } else {
    AttendHead<float>(q, layer, kv_head, first, last, scale, softcap, out);
  }
}

// Prefill: a block of up to kMaxRows query rows (token, query head) that share a KV head, one
// row a SIMD lane, in NV vectors of rows. A tile's keys and values are converted to f32 once and
// serve every row: the scores of all rows come from one FMA per key element and row vector (Q
// transposed: no horizontal sums), and the online softmax's max, sum and rescale are vector
// operations across the rows. Two vectors of rows (32 on AVX-512) convert each tile once for
// twice the rows, and each key element broadcast feeds two FMAs.
constexpr int64_t kLanes = static_cast<int64_t>(hn::MaxLanes(DF()));
static_assert(2 * kLanes <= kMaxRows, "QueryRows holds two vectors of rows");

// Rows j0 .. j0 + count of the tile's keys (or values) as f32 [padded][D]; rows count .. padded
// are zero (their scores are masked; zero values keep 0 · v finite).
template <typename T>
HWY_INLINE void TileToF32(const KvLayerView& layer, bool values, int64_t j0, int64_t count,
                          int64_t padded, int64_t head_offset, int64_t dim, float* dst) {
  const DF df;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  const int64_t block = BlockOf<T>(dim);
  const std::byte* rows[kBlockTile];
  TileRows(layer, values, j0, count, head_offset, rows);
  for (int64_t j = 0; j < padded; ++j) {
    if (j >= count) {
      for (int64_t i = 0; i < dim; i += lanes) hn::Store(hn::Zero(df), df, dst + j * dim + i);
      continue;
    }
    const std::byte* row = rows[j];
    for (int64_t b = 0; b < dim / block; ++b) {
      const std::byte* data = BlockAt<T>(row, b);
      float* to = dst + j * dim + b * block;
      if constexpr (kQ8<T>) {
        const auto d = hn::Set(df, Scale(data));
        for (int64_t c = 0; c < block; c += lanes) hn::Store(hn::Mul(d, Codes<T>(data, c)), df, to + c);
      } else {
        for (int64_t c = 0; c < block; c += lanes) hn::Store(Codes<T>(data, c), df, to + c);
      }
    }
  }
}

// Keys a score pass takes at once: each is an FMA chain per row vector, and with 4 chains their
// latency (4 cycles on Zen 5) held the scores to one FMA a cycle; 8 keep both FMA units busy,
// their key elements broadcast once for the NV vectors of rows. AVX2's 16 registers hold 8
// chains, so two row vectors take 4 keys there.
template <int NV>
constexpr int kScoreKeys = (HWY_TARGET == HWY_AVX2 && NV == 2) ? 4 : 8;
static_assert(kBlockTile % 8 == 0, "a prefill tile pads to whole score passes");

// Rows a value pass takes at once (fewer only for a scalar target's single lane).
constexpr int kRowStep = static_cast<int>(std::min<int64_t>(4, kLanes));
// Vectors of a row a value pass takes at once: its kRowStep x kValueVecs accumulators, the value
// vectors and a broadcast must fit the registers. AVX2 has 16, where 4 x 4 spilled.
#if HWY_TARGET == HWY_AVX2
constexpr int kValueVecs = 2;
#else
constexpr int kValueVecs = 4;
#endif

// acc[r] = acc[r] · corr[r] + Σ_j p[j][r] · v[j] for kRowStep rows from r0 and VN vectors from
// i0; p holds `rows` probabilities a key.
template <int VN>
HWY_INLINE void AccumulateValues(const float* p, int64_t rows, const float* vf, const float* corr,
                                 int64_t count, int64_t dim, int64_t r0, int64_t i0, float* acc) {
  const DF df;
  using V = hn::Vec<DF>;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  V a[kRowStep][VN];
  for (int r = 0; r < kRowStep; ++r) {
    for (int v = 0; v < VN; ++v) {
      a[r][v] =
          hn::Mul(hn::Load(df, acc + (r0 + r) * dim + i0 + v * lanes), hn::Set(df, corr[r0 + r]));
    }
  }
  for (int64_t j = 0; j < count; ++j) {
    V vv[VN];
    for (int v = 0; v < VN; ++v) vv[v] = hn::Load(df, vf + j * dim + i0 + v * lanes);
    for (int r = 0; r < kRowStep; ++r) {
      const V pr = hn::Set(df, p[j * rows + r0 + r]);
      for (int v = 0; v < VN; ++v) a[r][v] = hn::MulAdd(pr, vv[v], a[r][v]);
    }
  }
  for (int r = 0; r < kRowStep; ++r) {
    for (int v = 0; v < VN; ++v) hn::Store(a[r][v], df, acc + (r0 + r) * dim + i0 + v * lanes);
  }
}

// Rows [begin, begin + count) of `rows`, count <= NV lanes.
template <typename T, int NV>
void AttendBlockT(const QueryRows& rows, int64_t begin, int64_t count, const KvLayerView& layer,
                  int64_t kv_head, float scale, float softcap) {
  const DF df;
  using V = hn::Vec<DF>;
  constexpr int kKeys = kScoreKeys<NV>;
  const int64_t dim = layer.head_dim;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  const int64_t block_rows = NV * lanes;
  const int64_t head_offset = kv_head * static_cast<int64_t>(layer.head_bytes);
  HWY_ALIGN float qt[kMaxBlockDim * kMaxRows];    // [D][block_rows], times the scale
  HWY_ALIGN float kf[kBlockTile * kMaxBlockDim];  // [tile][D]
  HWY_ALIGN float vf[kBlockTile * kMaxBlockDim];  // [tile][D]
  HWY_ALIGN float p[kBlockTile * kMaxRows];       // [tile][block_rows]: scores, then probabilities
  HWY_ALIGN float acc[kMaxRows * kMaxBlockDim];   // [block_rows][D]
  HWY_ALIGN float first[kMaxRows];
  HWY_ALIGN float last[kMaxRows];
  HWY_ALIGN float corr[kMaxRows];
  // Unused lanes repeat the first row, so that every lane stays finite; they are not stored.
  int64_t min_first = rows.first[begin], max_last = 0;
  int64_t max_first = 0, min_last = rows.last[begin];  // a tile between them is every row's
  for (int64_t r = 0; r < block_rows; ++r) {
    const int64_t from = begin + (r < count ? r : 0);
    first[r] = static_cast<float>(rows.first[from]);
    last[r] = static_cast<float>(rows.last[from]);
    min_first = std::min(min_first, rows.first[from]);
    max_last = std::max(max_last, rows.last[from]);
    max_first = std::max(max_first, rows.first[from]);
    min_last = std::min(min_last, rows.last[from]);
    for (int64_t i = 0; i < dim; ++i) qt[i * block_rows + r] = scale * rows.q[from][i];
  }
  std::memset(acc, 0, sizeof(float) * block_rows * dim);
  V first_v[NV], last_v[NV], max[NV], sum[NV];
  // Masked scores and the first running max are the lowest float, not -inf: Highway's Exp is
  // defined from -FLT_MAX up, where it gives 0 as exp(-inf) would.
  const V lowest = hn::Set(df, std::numeric_limits<float>::lowest());
  for (int v = 0; v < NV; ++v) {
    first_v[v] = hn::Load(df, first + v * lanes);
    last_v[v] = hn::Load(df, last + v * lanes);
    max[v] = lowest;
    sum[v] = hn::Zero(df);
  }
  const V cap = hn::Set(df, softcap), inv_cap = hn::Set(df, softcap > 0.0f ? 1.0f / softcap : 0.0f);
  for (int64_t j0 = min_first; j0 <= max_last; j0 += kBlockTile) {
    const int64_t keys = std::min(kBlockTile, max_last + 1 - j0);
    const int64_t padded = (keys + kKeys - 1) / kKeys * kKeys;
    TileToF32<T>(layer, false, j0, keys, padded, head_offset, dim, kf);
    TileToF32<T>(layer, true, j0, keys, padded, head_offset, dim, vf);
    // Whether every row sees every key of the tile (padding included): then nothing is masked.
    const bool whole = j0 >= max_first && j0 + padded - 1 <= min_last;
    // Scores, kKeys keys at a time; positions outside a row's [first, last]: lowest.
    V tile_max[NV];
    for (int v = 0; v < NV; ++v) tile_max[v] = lowest;
    for (int64_t j = 0; j < padded; j += kKeys) {
      V s[NV][kKeys];
      for (int v = 0; v < NV; ++v) {
        for (int u = 0; u < kKeys; ++u) s[v][u] = hn::Zero(df);
      }
      for (int64_t i = 0; i < dim; ++i) {
        V qi[NV];
        for (int v = 0; v < NV; ++v) qi[v] = hn::Load(df, qt + i * block_rows + v * lanes);
        for (int u = 0; u < kKeys; ++u) {
          const V key = hn::Set(df, kf[(j + u) * dim + i]);
          for (int v = 0; v < NV; ++v) s[v][u] = hn::MulAdd(qi[v], key, s[v][u]);
        }
      }
      for (int u = 0; u < kKeys; ++u) {
        const V at = hn::Set(df, static_cast<float>(j0 + j + u));
        for (int v = 0; v < NV; ++v) {
          if (softcap > 0.0f) s[v][u] = hn::Mul(cap, hn::Tanh(df, hn::Mul(s[v][u], inv_cap)));
          if (!whole) {
            const auto outside = hn::Or(hn::Gt(at, last_v[v]), hn::Lt(at, first_v[v]));
            s[v][u] = hn::IfThenElse(outside, lowest, s[v][u]);
          }
          tile_max[v] = hn::Max(tile_max[v], s[v][u]);
          hn::Store(s[v][u], df, p + (j + u) * block_rows + v * lanes);
        }
      }
    }
    // A row whose window starts past this tile has seen nothing yet: its max stays lowest, and
    // its masked scores would give exp(0) = 1, so they are zeroed; its first seen score then
    // corrects the zero sum and accumulator by exp(lowest - max) = 0.
    for (int v = 0; v < NV; ++v) {
      const V new_max = hn::Max(max[v], tile_max[v]);
      const V correction = hn::Exp(df, hn::Sub(max[v], new_max));  // 0 on the first tile
      max[v] = new_max;
      V tile_sum = hn::Zero(df);
      for (int64_t j = 0; j < padded; ++j) {
        float* pj = p + j * block_rows + v * lanes;
        V e = hn::Exp(df, hn::Sub(hn::Load(df, pj), max[v]));
        if (!whole) {
          const V at = hn::Set(df, static_cast<float>(j0 + j));
          e = hn::IfThenElseZero(hn::And(hn::Le(at, last_v[v]), hn::Ge(at, first_v[v])), e);
        }
        hn::Store(e, df, pj);
        tile_sum = hn::Add(tile_sum, e);
      }
      sum[v] = hn::MulAdd(sum[v], correction, tile_sum);
      hn::Store(correction, df, corr + v * lanes);
    }
    for (int64_t r0 = 0; r0 < count; r0 += kRowStep) {
      int64_t i0 = 0;
      for (; i0 + kValueVecs * lanes <= dim; i0 += kValueVecs * lanes) {
        AccumulateValues<kValueVecs>(p, block_rows, vf, corr, padded, dim, r0, i0, acc);
      }
      for (; i0 < dim; i0 += lanes) {
        AccumulateValues<1>(p, block_rows, vf, corr, padded, dim, r0, i0, acc);
      }
    }
  }
  HWY_ALIGN float total[kMaxRows];
  for (int v = 0; v < NV; ++v) hn::Store(sum[v], df, total + v * lanes);
  for (int64_t r = 0; r < count; ++r) {
    const V inv = hn::Set(df, 1.0f / total[r]);
    for (int64_t i = 0; i < dim; i += lanes) {
      hn::StoreU(hn::Mul(hn::Load(df, acc + r * dim + i), inv), df, rows.out[begin + r] + i);
    }
  }
}

template <typename T>
void AttendBlocks(const QueryRows& rows, const KvLayerView& layer, int64_t kv_head, float scale,
                  float softcap) {
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(DF()));
  for (int64_t begin = 0; begin < rows.count; begin += 2 * lanes) {
    const int64_t count = std::min(2 * lanes, rows.count - begin);
    if (count > lanes) {
      AttendBlockT<T, 2>(rows, begin, count, layer, kv_head, scale, softcap);
    } else {
      AttendBlockT<T, 1>(rows, begin, count, layer, kv_head, scale, softcap);
    }
  }
}

void AttendRows(const QueryRows& rows, const KvLayerView& layer, int64_t kv_head, float scale,
                float softcap) {
  if (layer.dtype == DType::kF16) {
    AttendBlocks<hwy::float16_t>(rows, layer, kv_head, scale, softcap);
  } else if (layer.dtype == DType::kQ8_0) {
    AttendBlocks<BlockQ8_0>(rows, layer, kv_head, scale, softcap);
  } else {
    AttendBlocks<float>(rows, layer, kv_head, scale, softcap);
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace kite::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kite::cpu {

HWY_EXPORT(Attend);
HWY_EXPORT(AttendRows);

namespace {

// Stores token t of x [T, Hkv, D] (contiguous, n = Hkv · D floats) in a cache row, the same
// bytes as ref stores (the tensor layer's reference quantizer: f16 rounded to nearest even, by
// the CPU's conversion, f16_rows.h; q8_0 as ggml's quantize_row_q8_0_ref, refusing non-finite
// values).
Status WriteRow(const KvLayerView& layer, const float* x, int64_t n, const char* name, int64_t t,
                std::byte* row) {
  if (layer.dtype == DType::kF16) {
    F32ToF16Row(x, reinterpret_cast<uint16_t*>(row), n);
    return Ok();
  }
  Status stored = Quantize(layer.dtype, x, row, n);
  if (!stored) {
    return std::unexpected(std::move(stored.error())
                               .WithContext(std::string(name) + " of token " + std::to_string(t) +
                                            " into the KV cache"));
  }
  return Ok();
}

// Token t's k and v rows into the cache at position p.
Status WriteToken(const KvLayerView& layer, const TensorArg& k, const TensorArg& v, int64_t t,
                  int32_t p) {
  const int64_t n = k.shape[1] * k.shape[2];
  KITE_RETURN_IF_ERROR(WriteRow(layer, k.as<const float>() + t * n, n, "k", t, layer.key(p)));
  return WriteRow(layer, v.as<const float>() + t * n, n, "v", t, layer.value(p));
}

}  // namespace

SupportResult Support(const AttentionAttrs&, const Graph& graph, const Node& node) {
  for (int i = 0; i < 3; ++i) {
    const Value& v = graph.value(node.inputs[i]);
    if (!v.contiguous()) return SupportResult::No("input '" + v.name + "' is a strided view");
  }
  const int64_t dim = graph.value(node.inputs[0]).shape[2];
  if (dim % 16 != 0 || dim > kMaxHeadDim) {
    return SupportResult::No("head size " + std::to_string(dim) +
                             " is not a multiple of 16 up to " + std::to_string(kMaxHeadDim));
  }
  return SupportResult::Yes();
}

namespace {

// Tokens [begin, end) of the run, all of one sequence whose cache layer is `layer`: k and v
// enter the cache first, then query t sees positions first..positions[t] (first: 0, or its
// window's start).
Status AttendTokens(const AttentionAttrs& attrs, const KernelArgs& args, const KvLayerView& layer,
                    int64_t begin, int64_t end) {
  const TensorArg& q = args.in[0];
  const TensorArg& k = args.in[1];
  const TensorArg& v = args.in[2];
  const TensorArg& positions = args.in[3];
  const int64_t tokens = end - begin, q_heads = q.shape[1], dim = q.shape[2];
  const int64_t kv_heads = k.shape[1];
  const int64_t group = q_heads / kv_heads;
  const int64_t pos_step = positions.strides[0];
  const int32_t* pos = positions.as<const int32_t>() + begin * pos_step;  // [tokens]
  const float* qs = q.as<const float>() + begin * q_heads * dim;         // [tokens, Hq, D]
  float* outs = args.out.as<float>() + begin * q_heads * dim;            // [tokens, Hq, D]
  int64_t work = 0;
  for (int64_t t = begin; t < end; ++t) {
    const int32_t p = pos[(t - begin) * pos_step];
    if (p < 0 || p >= layer.length) {
      return InvalidInput("position " + std::to_string(p) + " of token " + std::to_string(t) +
                          " is outside the KV cache's valid length " +
                          std::to_string(layer.length));
    }
    work += (p + 1 - FirstVisiblePosition(attrs, p)) * q_heads * dim;
  }
  // Every row enters the cache before any query reads it; a prefill's rows are split over the
  // threads, 16 tokens at a time.
  KITE_RETURN_IF_ERROR(args.pool.TryEach(tokens, 16, [&](int64_t i) {
    return WriteToken(layer, k, v, begin + i, pos[i * pos_step]);
  }));
  if (tokens > 1 && dim <= kMaxBlockDim) {
    // Prefill: per KV head, its query rows (token-major, then the heads of its group) in blocks
    // of kMaxRows, taken by the threads one at a time.
    const int64_t rows = tokens * group;
    const int64_t blocks_per_head = (rows + kMaxRows - 1) / kMaxRows;
    auto attend_block = [&](int64_t unit) {
      const int64_t kv_head = unit / blocks_per_head;
      const int64_t first = unit % blocks_per_head * kMaxRows;
      QueryRows block;
      block.count = std::min(kMaxRows, rows - first);
      for (int64_t r = 0; r < block.count; ++r) {
        const int64_t t = (first + r) / group;
        const int64_t h = kv_head * group + (first + r) % group;
        block.q[r] = qs + (t * q_heads + h) * dim;
        block.out[r] = outs + (t * q_heads + h) * dim;
        block.first[r] = FirstVisiblePosition(attrs, pos[t * pos_step]);
        block.last[r] = pos[t * pos_step];
      }
      HWY_DYNAMIC_DISPATCH(AttendRows)(block, layer, kv_head, attrs.scale, attrs.softcap);
    };
    const int64_t units = kv_heads * blocks_per_head;
    args.pool.ParallelForChunks(units, 1, [&](int64_t first, int64_t last) {
      for (int64_t u = first; u < last; ++u) attend_block(u);
    });
    return Ok();
  }
  const int64_t units = tokens * q_heads;
  auto attend = [&](int64_t u) {
    const int64_t t = u / q_heads, h = u % q_heads;
    const int64_t last = pos[t * pos_step];
    HWY_DYNAMIC_DISPATCH(Attend)
    (qs + u * dim, layer, h / group, FirstVisiblePosition(attrs, last), last, attrs.scale,
     attrs.softcap, outs + u * dim);
  };
  if (work < (1 << 16) || units < 2) {
    for (int64_t u = 0; u < units; ++u) attend(u);
  } else {
    args.pool.ParallelForChunks(units, 1, [&](int64_t first, int64_t last) {
      for (int64_t u = first; u < last; ++u) attend(u);
    });
  }
  return Ok();
}

// A batched decode step: token t is the only token of its sequence. Every row enters its cache
// first, then the (token, query head) pairs of all sequences are spread over the threads
// together, each attended exactly as a decode step of its sequence alone would (the same bits).
Status AttendBatch(const AttentionAttrs& attrs, const KernelArgs& args, const KvCacheView& cache) {
  const TensorArg& q = args.in[0];
  const TensorArg& k = args.in[1];
  const TensorArg& v = args.in[2];
  const TensorArg& positions = args.in[3];
  const int64_t tokens = q.shape[0], q_heads = q.shape[1], dim = q.shape[2];
  const int64_t kv_heads = k.shape[1];
  const int64_t group = q_heads / kv_heads;
  const int64_t pos_step = positions.strides[0];
  const int32_t* pos = positions.as<const int32_t>();
  int64_t work = 0;
  for (int64_t t = 0; t < tokens; ++t) {
    const KvLayerView& layer = cache.layer(t, attrs.layer);
    const int32_t p = pos[t * pos_step];
    if (p < 0 || p >= layer.length) {
      return InvalidInput("position " + std::to_string(p) + " of token " + std::to_string(t) +
                          " is outside the KV cache's valid length " +
                          std::to_string(layer.length));
    }
    KITE_RETURN_IF_ERROR(WriteToken(layer, k, v, t, p));
    work += (p + 1 - FirstVisiblePosition(attrs, p)) * q_heads * dim;
  }
  const float* qs = q.as<const float>();
  float* outs = args.out.as<float>();
  auto attend = [&](int64_t u) {
    const int64_t t = u / q_heads, h = u % q_heads;
    const int64_t last = pos[t * pos_step];
    HWY_DYNAMIC_DISPATCH(Attend)
    (qs + u * dim, cache.layer(t, attrs.layer), h / group, FirstVisiblePosition(attrs, last), last,
     attrs.scale, attrs.softcap, outs + u * dim);
  };
  const int64_t units = tokens * q_heads;
  if (work < (1 << 16)) {
    for (int64_t u = 0; u < units; ++u) attend(u);
  } else {
    args.pool.ParallelForChunks(units, 1, [&](int64_t first, int64_t last) {
      for (int64_t u = first; u < last; ++u) attend(u);
    });
  }
  return Ok();
}

}  // namespace

// q [T, Hq, D], k and v [T, Hkv, D], positions [T] -> out [T, Hq, D]; the same contract as ref.
// Consecutive tokens of one sequence run together (a run usually holds one sequence); a
// batched decode step (one token a sequence) runs its sequences side by side.
Status Run(const AttentionAttrs& attrs, const KernelArgs& args) {
  KITE_RETURN_IF_ERROR(CheckAttentionCache(attrs, args.context, args.in[1]));
  const KvCacheView& cache = *args.context.kv_cache;
  const int64_t tokens = args.in[0].shape[0];
  if (cache.decode_steps(tokens)) return AttendBatch(attrs, args, cache);
  for (int64_t begin = 0, end = 0; begin < tokens; begin = end) {
    end = begin + 1;
    while (end < tokens && cache.sequence_of(end) == cache.sequence_of(begin)) ++end;
    KITE_RETURN_IF_ERROR(AttendTokens(attrs, args, cache.layer(begin, attrs.layer), begin, end));
  }
  return Ok();
}

}  // namespace kite::cpu
#endif  // HWY_ONCE
