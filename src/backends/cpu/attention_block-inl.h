// What prefill attention's two block kernels share (attention_prefill.cpp on f32 FMAs,
// attention_prefill_amx-inl.h on AMX's tiles): the positions a block's rows see, and the online
// softmax over tiles of their scores, one SIMD lane a row, with the final division.
// Included after hwy/highway.h by a foreach_target file: the guard toggles once per target.
#if defined(KITE_BACKENDS_CPU_ATTENTION_BLOCK_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef KITE_BACKENDS_CPU_ATTENTION_BLOCK_INL_H_
#undef KITE_BACKENDS_CPU_ATTENTION_BLOCK_INL_H_
#else
#define KITE_BACKENDS_CPU_ATTENTION_BLOCK_INL_H_
#endif

#include <algorithm>
#include <limits>

#include <hwy/highway.h>
// clang-format off: after highway.h
#include <hwy/contrib/math/math-inl.h>
// clang-format on

#include "backends/cpu/attention_kernels.h"

HWY_BEFORE_NAMESPACE();
namespace kite::cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;

// Rows [begin, begin + count) of `rows` as a block of block_rows lanes: the first and last
// position each sees, as floats a lane (unused lanes repeat the first row, so that every lane
// stays finite; they are not stored), the positions any row sees, and those every row sees.
struct BlockRows {
  int64_t block_rows = 0;
  HWY_ALIGN float first[kMaxRows];
  HWY_ALIGN float last[kMaxRows];
  int64_t min_first = 0, max_last = 0;  // the tiles to visit
  int64_t max_first = 0, min_last = 0;  // a tile between them is every row's
};

inline BlockRows SetBlockRows(const QueryRows& rows, int64_t begin, int64_t count,
                              int64_t block_rows) {
  BlockRows b;
  b.block_rows = block_rows;
  b.min_first = b.max_first = rows.first[begin];
  b.min_last = b.max_last = rows.last[begin];
  for (int64_t r = 0; r < block_rows; ++r) {
    const int64_t from = begin + (r < count ? r : 0);
    b.first[r] = static_cast<float>(rows.first[from]);
    b.last[r] = static_cast<float>(rows.last[from]);
    b.min_first = std::min(b.min_first, rows.first[from]);
    b.max_last = std::max(b.max_last, rows.last[from]);
    b.max_first = std::max(b.max_first, rows.first[from]);
    b.min_last = std::min(b.min_last, rows.last[from]);
  }
  return b;
}

// The online softmax of NV vectors of rows over tiles of scores p [tile][block_rows]: a running
// max and sum a row, as vector operations across the rows (no horizontal reductions).
template <int NV>
class OnlineSoftmax {
 public:
  explicit OnlineSoftmax(const BlockRows& rows) : rows_(rows) {
    for (int64_t r = 0; r < rows.block_rows; ++r) {
      max_[r] = std::numeric_limits<float>::lowest();
      sum_[r] = 0.0f;
    }
  }

  // p's scores of positions j0 .. j0 + padded (soft-capped where softcap > 0) become their
  // exponentials less the running max, 0 outside a row's [first, last]; corr [block_rows] is
  // what the rows' accumulators are multiplied by before this tile's values are added.
  void Tile(float* p, int64_t j0, int64_t padded, float softcap, float* corr) {
    const DF df;
    using V = hn::Vec<DF>;
    const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
    const int64_t stride = rows_.block_rows;
    // Masked scores and the first running max are the lowest float, not -inf: Highway's Exp is
    // defined from -FLT_MAX up, where it gives 0 as exp(-inf) would.
    const V lowest = hn::Set(df, std::numeric_limits<float>::lowest());
    const V cap = hn::Set(df, softcap);
    const V inv_cap = hn::Set(df, softcap > 0.0f ? 1.0f / softcap : 0.0f);
    // Whether every row sees every position of the tile (padding included): nothing is masked.
    const bool whole = j0 >= rows_.max_first && j0 + padded - 1 <= rows_.min_last;
    for (int v = 0; v < NV; ++v) {
      const V first = hn::Load(df, rows_.first + v * lanes);
      const V last = hn::Load(df, rows_.last + v * lanes);
      V tile_max = lowest;
      for (int64_t j = 0; j < padded; ++j) {
        float* pj = p + j * stride + v * lanes;
        V s = hn::Load(df, pj);
        if (softcap > 0.0f) s = hn::Mul(cap, hn::Tanh(df, hn::Mul(s, inv_cap)));
        if (!whole) {
          const V at = hn::Set(df, static_cast<float>(j0 + j));
          s = hn::IfThenElse(hn::Or(hn::Gt(at, last), hn::Lt(at, first)), lowest, s);
        }
        tile_max = hn::Max(tile_max, s);
        hn::Store(s, df, pj);
      }
      // A row whose window starts past this tile has seen nothing yet: its max stays lowest,
      // and its masked scores would give exp(0) = 1, so they are zeroed; its first seen score
      // then corrects the zero sum and accumulator by exp(lowest - max) = 0.
      const V max = hn::Load(df, max_ + v * lanes);
      const V new_max = hn::Max(max, tile_max);
      const V correction = hn::Exp(df, hn::Sub(max, new_max));  // 0 on the first tile
      V tile_sum = hn::Zero(df);
      for (int64_t j = 0; j < padded; ++j) {
        float* pj = p + j * stride + v * lanes;
        V e = hn::Exp(df, hn::Sub(hn::Load(df, pj), new_max));
        if (!whole) {
          const V at = hn::Set(df, static_cast<float>(j0 + j));
          e = hn::IfThenElseZero(hn::And(hn::Le(at, last), hn::Ge(at, first)), e);
        }
        hn::Store(e, df, pj);
        tile_sum = hn::Add(tile_sum, e);
      }
      hn::Store(new_max, df, max_ + v * lanes);
      hn::Store(hn::MulAdd(hn::Load(df, sum_ + v * lanes), correction, tile_sum), df,
                sum_ + v * lanes);
      hn::Store(correction, df, corr + v * lanes);
    }
  }

  // Rows [begin, begin + count) of `rows`: their accumulated values acc [block_rows][dim] over
  // their sums.
  void Finish(const QueryRows& rows, int64_t begin, int64_t count, const float* acc,
              int64_t dim) const {
    const DF df;
    const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
    for (int64_t r = 0; r < count; ++r) {
      const auto inv = hn::Set(df, 1.0f / sum_[r]);
      for (int64_t i = 0; i < dim; i += lanes) {
        hn::StoreU(hn::Mul(hn::Load(df, acc + r * dim + i), inv), df, rows.out[begin + r] + i);
      }
    }
  }

 private:
  const BlockRows& rows_;
  HWY_ALIGN float max_[kMaxRows];
  HWY_ALIGN float sum_[kMaxRows];
};

}  // namespace HWY_NAMESPACE
}  // namespace kite::cpu
HWY_AFTER_NAMESPACE();

#endif  // KITE_BACKENDS_CPU_ATTENTION_BLOCK_INL_H_
