// AWQ (Lin et al. 2023, "AWQ: Activation-aware Weight Quantization for LLM Compression and
// Acceleration"): the weights that meet large activations matter most, so scale each input
// channel j of the linears reading one input up by s_j before quantizing (and the input down
// by s_j, folded into whatever produces it: an RMSNorm's weight, or the rows of the linear
// before it), with
//
//   s_j = mean|x_j|^α / sqrt(max_k s_k · min_k s_k),   α on a grid of 20 points in [0, 1)
//
// chosen to minimize the output error on the calibration samples,
// Σ_linears ||Q(W·diag(s))·diag(1/s)·Xᵀ - W·Xᵀ||², α = 0 (s = 1, plain round to nearest)
// included. Then a clipping search per group of the grid (AWQ's auto_clip) on the scaled
// weights against the scaled inputs shrinks each group's range where that lowers its share of
// the output error. The result is float: the scaled, clipped weights for the target quantizer,
// and the scales to fold (graph/passes/fold_channel_scale.h with 1/s as the norm's scale).
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

struct AwqOptions {
  int32_t scale_points = 20;  // α = i / scale_points, i = 0 .. scale_points - 1
  bool clip = true;           // the clipping search after the scales
  int32_t clip_points = 10;   // clip ratios from 1 down to lowest_clip (AWQ: 1 .. 0.55)
  float lowest_clip = 0.55f;
  int64_t max_samples = 128;  // sampled input rows scored (0: all the statistics hold)
  // Output rows of each linear the scale search scores, evenly spaced (0: all); the clipping
  // search always takes every row.
  int64_t max_rows = 1024;
};

// One linear layer reading the shared input: weight [out, in] row-major.
struct AwqLinear {
  std::string_view name;
  std::span<const float> weight;
  int64_t out = 0;
};

struct AwqResult {
  float alpha = 0.0f;
  std::vector<float> scale;                    // [in]: s
  std::vector<std::vector<float>> weights;     // per linear [out, in]: W·diag(s), clipped
  std::vector<std::vector<float>> clip_ratio;  // per linear [out, groups]
  double rtn_error = 0.0;  // the output error of round to nearest, on the samples
  double error = 0.0;      // and of AWQ's weights fake-quantized on the grid
};

// `linears` all read the input `stats` describes (sampled rows needed); errors name the weight.
Result<AwqResult> Awq(std::span<const AwqLinear> linears, const LinearInputStats& stats,
                      const WeightGrid& grid, const AwqOptions& options, ThreadPool* pool);

}  // namespace kite
