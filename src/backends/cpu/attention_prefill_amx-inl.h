// Prefill attention on AMX's bf16 tiles (amx.h), for f16 caches and head sizes in whole tiles
// of 32: a block of 32 query rows by tiles of 32 positions. A score tile is keys by queries
// (positions down, query rows across), so that it is stored in the layout of the online softmax
// the f32 kernel uses (attention_block-inl.h: one lane a row); its probabilities, paired by
// position, then multiply the values transposed (a row of the head's element by 32 positions)
// into the block's sums, held transposed too ([D][row]), so that the softmax's corrections
// scale them a vector of rows at a time. The keys and values of every KV head are put in these
// layouts once a prefill (TileParts), for all its blocks of rows.
// Accuracy: keys and values are f16, each the sum of two bf16 exactly (Bf16Rest); queries and
// probabilities are split the same way into 16 of their 24 bits. Each product is
// hi·hi + hi·lo + lo·hi, as for F16 weights (matmul_bf16_amx-inl.h): what that leaves out is
// about 2^-16 of Σ|q·k| in a score and of Σ|p·v| in an output. llama.cpp's CPU attention rounds
// q to f16 (2^-11 a product) and its probabilities to f16.
// Speed: a tile of 32 positions by 32 rows at head size 64 takes 24 tile products for the
// scores and 24 for the values, where the f32 kernel takes 8192 FMAs of 16 lanes.
// Included by attention_prefill.cpp (after hwy/highway.h, once per target); the tiles only on
// the AVX-512 targets, where AttendRows calls AttendRowsAmx when QueryRows::amx_tiles is set.
#if defined(KITE_BACKENDS_CPU_ATTENTION_PREFILL_AMX_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef KITE_BACKENDS_CPU_ATTENTION_PREFILL_AMX_INL_H_
#undef KITE_BACKENDS_CPU_ATTENTION_PREFILL_AMX_INL_H_
#else
#define KITE_BACKENDS_CPU_ATTENTION_PREFILL_AMX_INL_H_
#endif

#include <algorithm>
#include <cstring>

#include <hwy/highway.h>
// clang-format off: after highway.h
#include "backends/cpu/amx_tiles-inl.h"
#include "backends/cpu/attention_block-inl.h"
// clang-format on

#include "backends/cpu/attention_kernels.h"

HWY_BEFORE_NAMESPACE();
namespace kite::cpu {
namespace HWY_NAMESPACE {

#if KITE_BF16_PAIRS
static_assert(kBlockTile == 2 * kAmxTileRows && kMaxRows == 2 * kAmxTileRows,
              "a block is two tiles of rows by two of positions");
// A tile of AMX's second operand: 16 rows of 16 pairs of bf16.
constexpr int64_t kPairTile = kAmxTileRows * kAmxTileK;

// The block's queries (times the scale) as AMX's second operand, hi and lo parts: for each 32 of
// the head, a tile of rows 0-15 then one of rows 16-31, its row e holding elements 2e and 2e+1
// of each query row side by side. Rows from count repeat the first.
KITE_AMX_ATTR HWY_INLINE void QueryPairs(const QueryRows& rows, int64_t count, int64_t dim,
                                         float scale, uint16_t* hi, uint16_t* lo) {
  const __m512 times = _mm512_set1_ps(scale);
  for (int64_t i = 0; i < dim; i += kAmxTileK) {
    for (int64_t half = 0; half < 2; ++half) {
      // Row r's 16 pairs, then transposed: pair e of the 16 rows.
      __m512i pairs_hi[kAmxTileRows], pairs_lo[kAmxTileRows];
      for (int64_t r = 0; r < kAmxTileRows; ++r) {
        const int64_t row = half * kAmxTileRows + r;
        const float* q = rows.q[row < count ? row : 0] + i;
        const Bf16Parts parts = SplitToBf16(_mm512_mul_ps(times, _mm512_loadu_ps(q)),
                                            _mm512_mul_ps(times, _mm512_loadu_ps(q + 16)));
        pairs_hi[r] = parts.hi;
        pairs_lo[r] = parts.lo;
      }
      Transpose16x16(pairs_hi);
      Transpose16x16(pairs_lo);
      const int64_t tile = (i / kAmxTileK * 2 + half) * kPairTile;
      for (int64_t e = 0; e < kAmxTileRows; ++e) {
        _mm512_store_si512(hi + tile + e * kAmxTileK, pairs_hi[e]);
        _mm512_store_si512(lo + tile + e * kAmxTileK, pairs_lo[e]);
      }
    }
  }
}

// 16 f16 from p as f32.
KITE_AMX_ATTR HWY_INLINE __m512 LoadF16Row(const uint16_t* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

// A tile's keys (f16 heads at rows[j] for j in [from, count)) as AMX's first operand
// [kBlockTile][dim], hi and lo parts; the other rows are zero (their scores are masked).
KITE_AMX_ATTR HWY_INLINE void KeysToParts(const std::byte* const* rows, int64_t from, int64_t count,
                                          int64_t dim, uint16_t* hi, uint16_t* lo) {
  for (int64_t j = 0; j < kBlockTile; ++j) {
    if (j < from || j >= count) {
      std::memset(hi + j * dim, 0, dim * sizeof(uint16_t));
      std::memset(lo + j * dim, 0, dim * sizeof(uint16_t));
      continue;
    }
    const auto* key = reinterpret_cast<const uint16_t*>(rows[j]);
    for (int64_t i = 0; i < dim; i += kAmxTileK) {
      SplitToBf16(LoadF16Row(key + i), LoadF16Row(key + i + 16), hi + j * dim + i,
                  lo + j * dim + i);
    }
  }
}

// A tile's values (f16 heads at rows[j] for j in [from, count)) transposed, as AMX's first
// operand [dim][kBlockTile] (an element's 32 positions a row), hi and lo parts; the other
// positions are zero (0 · v stays finite).
KITE_AMX_ATTR HWY_INLINE void ValuesTransposed(const std::byte* const* rows, int64_t from,
                                               int64_t count, int64_t dim, uint16_t* hi,
                                               uint16_t* lo) {
  auto load = [&](int64_t j, int64_t c) KITE_AMX_ATTR {
    if (j < from || j >= count) return _mm512_setzero_ps();
    return LoadF16Row(reinterpret_cast<const uint16_t*>(rows[j]) + c);
  };
  for (int64_t c = 0; c < dim; c += kAmxTileRows) {
    // Positions 2e and 2e+1 of 16 elements as pairs, then transposed: element c + i's 16 pairs,
    // its 32 positions in order.
    __m512i pairs_hi[kAmxTileRows], pairs_lo[kAmxTileRows];
    for (int64_t e = 0; e < kAmxTileRows; ++e) {
      const Bf16Parts parts = SplitToBf16(load(2 * e, c), load(2 * e + 1, c));
      pairs_hi[e] = InterleavePairs(parts.hi);
      pairs_lo[e] = InterleavePairs(parts.lo);
    }
    Transpose16x16(pairs_hi);
    Transpose16x16(pairs_lo);
    for (int64_t i = 0; i < kAmxTileRows; ++i) {
      _mm512_store_si512(hi + (c + i) * kBlockTile, pairs_hi[i]);
      _mm512_store_si512(lo + (c + i) * kBlockTile, pairs_lo[i]);
    }
  }
}

// Positions j0 .. j0 + count of kv_head as AmxTileElems(D) elements at dst: keys' hi and lo
// parts (KeysToParts), then values' (ValuesTransposed); those below `first` as zeros, unread
// (a sliding window releases the pages below what its rows see, and a tile may start below
// that). Written once a prefill and layer for every block of rows: the tile loads that read
// them then wait for no recent stores (a tile load of lines just written by vector stores
// stalls until they leave the core).
KITE_AMX_ATTR inline void TileParts(const KvLayerView& layer, int64_t kv_head, int64_t first,
                                    int64_t j0, int64_t count, uint16_t* dst) {
  const int64_t dim = layer.head_dim;
  const int64_t head_offset = kv_head * static_cast<int64_t>(layer.head_bytes);
  const int64_t part = kBlockTile * dim;
  const int64_t from = std::clamp<int64_t>(first - j0, 0, count);
  const std::byte* rows[kBlockTile];
  TileRows(layer, false, j0 + from, count - from, head_offset, rows + from);
  KeysToParts(rows, from, count, dim, dst, dst + part);
  TileRows(layer, true, j0 + from, count - from, head_offset, rows + from);
  ValuesTransposed(rows, from, count, dim, dst + 2 * part, dst + 3 * part);
}

// Probabilities p [kBlockTile][kMaxRows] as AMX's second operand, hi and lo parts: a tile of
// rows 0-15, then one of rows 16-31, its row e holding positions 2e and 2e+1 of each query row
// side by side.
KITE_AMX_ATTR HWY_INLINE void ProbabilityPairs(const float* p, uint16_t* hi, uint16_t* lo) {
  for (int64_t half = 0; half < 2; ++half) {
    for (int64_t e = 0; e < kBlockTile / 2; ++e) {
      const Bf16Parts parts =
          SplitToBf16(_mm512_load_ps(p + 2 * e * kMaxRows + half * kAmxTileRows),
                      _mm512_load_ps(p + (2 * e + 1) * kMaxRows + half * kAmxTileRows));
      const int64_t at = half * kPairTile + e * kAmxTileK;
      _mm512_store_si512(hi + at, InterleavePairs(parts.hi));
      _mm512_store_si512(lo + at, InterleavePairs(parts.lo));
    }
  }
}

// Tiles of positions a block takes at a time: the scores of all, then their softmax and
// probabilities, then their values, each 32 of the head's accumulators held in the tiles across
// all of them. A tile load of lines that vector stores just wrote waits until those leave the
// core: the accumulators, rescaled by the softmax, and the probabilities are written once a
// chunk and read by the tiles after the rest of the chunk's stores, where a tile at a time
// stalled on them (135M pp512 on a Xeon: attention 0.083 ms a token a tile at a time, 0.076 in
// chunks of 8).
constexpr int64_t kChunkTiles = 8;

// The rows of `rows` (rows.amx_tiles set; head size a multiple of 32 up to kMaxBlockDim), one
// block of up to kMaxRows.
KITE_AMX_ATTR inline void AttendRowsAmx(const QueryRows& rows, int64_t dim, float scale,
                                        float softcap) {
  const int64_t count = rows.count;
  const int64_t key_stride = dim * sizeof(uint16_t);
  const int64_t part = kBlockTile * dim;
  constexpr int64_t kValueStride = kBlockTile * sizeof(uint16_t);
  constexpr int64_t kTileScores = kBlockTile * kMaxRows;
  alignas(64) uint16_t q_hi[kMaxRows * kMaxBlockDim], q_lo[kMaxRows * kMaxBlockDim];
  // [position][row]: a chunk's scores, then probabilities; those as pairs (ProbabilityPairs).
  alignas(64) float p[kChunkTiles * kTileScores];
  alignas(64) uint16_t p_hi[kChunkTiles * kTileScores], p_lo[kChunkTiles * kTileScores];
  // [D][row]: the values' sums transposed (the tiles take values as rows of positions), so that
  // the softmax's corrections scale them a vector of rows at a time.
  alignas(64) float acc[kMaxBlockDim * kMaxRows];
  alignas(64) float corr[kMaxRows];
  const BlockRows block = SetBlockRows(rows, 0, count, kMaxRows);
  QueryPairs(rows, count, dim, scale, q_hi, q_lo);
  std::memset(acc, 0, sizeof(float) * dim * kMaxRows);
  OnlineSoftmax<2> softmax(block);
  const AmxTileConfig config;
  _tile_loadconfig(&config);
  // The compilers' tile loads name no memory: keep the stores above before them.
  asm volatile("" ::: "memory");
  const int64_t start = block.min_first / kBlockTile * kBlockTile;
  const int64_t elems = AmxTileElems(dim);
  const uint16_t* first_tile = rows.amx_tiles + (start - rows.amx_first) / kBlockTile * elems;
  for (int64_t j0 = start; j0 <= block.max_last; j0 += kChunkTiles * kBlockTile) {
    const int64_t tiles = std::min(kChunkTiles, (block.max_last - j0) / kBlockTile + 1);
    const uint16_t* chunk = first_tile + (j0 - start) / kBlockTile * elems;
    // Scores: tmm(2a + b) holds positions 16a.. by rows 16b.., k·q hi·hi + hi·lo + lo·hi.
    for (int64_t t = 0; t < tiles; ++t) {
      const uint16_t* k_hi = chunk + t * elems;
      const uint16_t* k_lo = k_hi + part;
      AmxZeroSums();
      for (int64_t i = 0; i < dim; i += kAmxTileK) {
        const uint16_t* kh = k_hi + i;
        const uint16_t* kl = k_lo + i;
        const uint16_t* qh = q_hi + i / kAmxTileK * 2 * kPairTile;
        const uint16_t* ql = q_lo + i / kAmxTileK * 2 * kPairTile;
        AmxStep(kh, kh + kAmxTileRows * dim, key_stride, qh, qh + kPairTile);
        AmxStep(nullptr, nullptr, key_stride, ql, ql + kPairTile);
        AmxStep(kl, kl + kAmxTileRows * dim, key_stride, qh, qh + kPairTile);
      }
      AmxStoreSums(p + t * kTileScores, kMaxRows);
    }
    asm volatile("" ::: "memory");
    softmax.Tile(p, j0, tiles * kBlockTile, softcap, corr);
    const __m512 corr0 = _mm512_load_ps(corr), corr1 = _mm512_load_ps(corr + kAmxTileRows);
    for (int64_t i = 0; i < dim; ++i) {
      float* sums = acc + i * kMaxRows;
      _mm512_store_ps(sums, _mm512_mul_ps(corr0, _mm512_load_ps(sums)));
      _mm512_store_ps(sums + kAmxTileRows,
                      _mm512_mul_ps(corr1, _mm512_load_ps(sums + kAmxTileRows)));
    }
    for (int64_t t = 0; t < tiles; ++t) {
      ProbabilityPairs(p + t * kTileScores, p_hi + t * kTileScores, p_lo + t * kTileScores);
    }
    asm volatile("" ::: "memory");
    // Values, 32 of the head at a time: tmm(2a + b) holds elements c + 16a.. by rows 16b..
    for (int64_t c = 0; c < dim; c += kAmxTileK) {
      AmxLoadSums(acc + c * kMaxRows, kMaxRows);
      for (int64_t t = 0; t < tiles; ++t) {
        const uint16_t* vh = chunk + t * elems + 2 * part + c * kBlockTile;
        const uint16_t* vl = vh + part;
        const uint16_t* ph = p_hi + t * kTileScores;
        const uint16_t* pl = p_lo + t * kTileScores;
        AmxStep(vh, vh + kAmxTileRows * kBlockTile, kValueStride, ph, ph + kPairTile);
        AmxStep(nullptr, nullptr, kValueStride, pl, pl + kPairTile);
        AmxStep(vl, vl + kAmxTileRows * kBlockTile, kValueStride, ph, ph + kPairTile);
      }
      AmxStoreSums(acc + c * kMaxRows, kMaxRows);
    }
    asm volatile("" ::: "memory");
  }
  // The sums back to [row][D] for the division, in p (a chunk holds kMaxRows x kMaxBlockDim).
  static_assert(kChunkTiles * kBlockTile >= kMaxBlockDim);
  for (int64_t i = 0; i < dim; ++i) {
    for (int64_t r = 0; r < count; ++r) p[r * dim + i] = acc[i * kMaxRows + r];
  }
  _tile_release();  // so that a context switch need not save the tiles' 8 KB
  softmax.Finish(rows, 0, count, p, dim);
}
#endif  // KITE_BF16_PAIRS

}  // namespace HWY_NAMESPACE
}  // namespace kite::cpu
HWY_AFTER_NAMESPACE();

#endif  // KITE_BACKENDS_CPU_ATTENTION_PREFILL_AMX_INL_H_
