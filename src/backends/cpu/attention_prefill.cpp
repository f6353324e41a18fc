// Prefill attention: the query rows that share a KV head, in blocks of one or two vectors of
// rows, one SIMD lane a row, over tiles of cached positions converted to f32 once for the whole
// block (attention.cpp splits a prefill into such blocks and hands them to the threads); on a
// CPU with AMX, blocks of 32 rows on its tiles (attention_prefill_amx-inl.h).
#include <algorithm>
#include <cstring>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backends/cpu/attention_prefill.cpp"
#define HWY_DISABLED_TARGETS (HWY_SSSE3 | HWY_SSE4)
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
// clang-format off: after highway.h, once per target
#include "backends/cpu/attention_block-inl.h"
#include "backends/cpu/attention_kv-inl.h"
#include "backends/cpu/attention_prefill_amx-inl.h"
// clang-format on

#include "backends/cpu/attention_kernels.h"

HWY_BEFORE_NAMESPACE();
namespace kite::cpu {
namespace HWY_NAMESPACE {

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
        for (int64_t c = 0; c < block; c += lanes) {
          hn::Store(hn::Mul(d, Codes<T>(data, c)), df, to + c);
        }
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
  HWY_ALIGN float corr[kMaxRows];
  const BlockRows block = SetBlockRows(rows, begin, count, block_rows);
  for (int64_t r = 0; r < block_rows; ++r) {
    const float* q = rows.q[begin + (r < count ? r : 0)];
    for (int64_t i = 0; i < dim; ++i) qt[i * block_rows + r] = scale * q[i];
  }
  std::memset(acc, 0, sizeof(float) * block_rows * dim);
  OnlineSoftmax<NV> softmax(block);
  for (int64_t j0 = block.min_first; j0 <= block.max_last; j0 += kBlockTile) {
    const int64_t keys = std::min(kBlockTile, block.max_last + 1 - j0);
    const int64_t padded = (keys + kKeys - 1) / kKeys * kKeys;
    TileToF32<T>(layer, false, j0, keys, padded, head_offset, dim, kf);
    TileToF32<T>(layer, true, j0, keys, padded, head_offset, dim, vf);
    // Scores, kKeys keys at a time.
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
        for (int v = 0; v < NV; ++v) hn::Store(s[v][u], df, p + (j + u) * block_rows + v * lanes);
      }
    }
    softmax.Tile(p, j0, padded, softcap, corr);
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
  softmax.Finish(rows, begin, count, acc, dim);
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
#if KITE_BF16_PAIRS
  if (rows.amx_tiles != nullptr) {
    AttendRowsAmx(rows, layer.head_dim, scale, softcap);
    return;
  }
#endif
  if (layer.dtype == DType::kF16) {
    AttendBlocks<hwy::float16_t>(rows, layer, kv_head, scale, softcap);
  } else if (layer.dtype == DType::kQ8_0) {
    AttendBlocks<BlockQ8_0>(rows, layer, kv_head, scale, softcap);
  } else {
    AttendBlocks<float>(rows, layer, kv_head, scale, softcap);
  }
}

bool AmxTileParts(const KvLayerView& layer, int64_t kv_head, int64_t first, int64_t j0,
                  int64_t count, uint16_t* dst) {
#if KITE_BF16_PAIRS
  TileParts(layer, kv_head, first, j0, count, dst);
  return true;
#else
  return false;
#endif
}

}  // namespace HWY_NAMESPACE
}  // namespace kite::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kite::cpu {
HWY_EXPORT(AttendRows);
HWY_EXPORT(AmxTileParts);

bool AmxTileParts(const KvLayerView& layer, int64_t kv_head, int64_t first, int64_t j0,
                  int64_t count, uint16_t* dst) {
  return HWY_DYNAMIC_DISPATCH(AmxTileParts)(layer, kv_head, first, j0, count, dst);
}

void AttendRows(const QueryRows& rows, const KvLayerView& layer, int64_t kv_head, float scale,
                float softcap) {
  HWY_DYNAMIC_DISPATCH(AttendRows)(rows, layer, kv_head, scale, softcap);
}
}  // namespace kite::cpu
#endif  // HWY_ONCE
