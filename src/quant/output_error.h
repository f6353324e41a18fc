// What AWQ, SeqMSE and the clip searches minimize: how far a linear layer's outputs move on the
// sampled calibration rows when its weight W [out, in] becomes Q, ||(Q - W)·Xᵀ||², computed as
// one product with the samples transposed (quant/dense_linalg.h, on the thread pool).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "base/thread_pool.h"
#include "quant/linear_stats.h"
#include "quant/weight_grid.h"

namespace kite {

// Sampled input rows, transposed: xt [in, rows].
struct SampleColumns {
  int64_t in = 0;
  int64_t rows = 0;
  std::vector<float> xt;
};

// Up to `max_rows` of stats.samples (evenly spaced; 0: all), transposed. An error names the
// weight when the statistics hold no samples or their width is not `in`.
Result<SampleColumns> TransposeSamples(std::string_view name, const LinearInputStats& stats,
                                       int64_t in, int64_t max_rows);

// Σ over output rows and samples of (delta · xᵀ)², delta [out, in] (row-major).
double OutputSquaredError(std::span<const float> delta, int64_t out, const SampleColumns& x,
                          ThreadPool* pool);

// Per output row: Σ over samples of (delta_row · xᵀ)², into row_error [out].
void RowOutputSquaredErrors(std::span<const float> delta, int64_t out, const SampleColumns& x,
                            std::span<double> row_error, ThreadPool* pool);

// The clip ratio search of AWQ and SeqMSE: for each output row (per_group: each group of the
// grid, scored by its share of the output, AWQ's auto_clip), the candidate ratio whose
// fake-quantized values move the outputs least on the samples. Ratio 1 (round to nearest) is
// always a candidate, so no row gets worse than RTN on the samples.
struct ClipSearchResult {
  std::vector<float> ratio;      // [out] (per row) or [out, groups] (per group)
  std::vector<float> clipped;    // [out, in]: W clamped to each chosen clip range
  std::vector<float> quantized;  // [out, in]: W fake-quantized with the chosen clips
};
Result<ClipSearchResult> SearchClipRatios(std::string_view name, std::span<const float> weight,
                                          int64_t out, const SampleColumns& x,
                                          const WeightGrid& grid, std::span<const float> ratios,
                                          bool per_group, ThreadPool* pool);

// Candidate ratios: `count` evenly spaced from 1 down to `lowest` (both included).
std::vector<float> ClipRatios(int32_t count, float lowest);

}  // namespace kite
