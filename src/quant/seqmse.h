// SeqMSE (sequential MSE, as in Qualcomm AIMET's seq_mse): for each output channel, the clip of
// its quantization range, from a small grid of candidate ratios, that moves the channel's
// output on the calibration samples least, min ||Q_c(W)·Xᵀ - W·Xᵀ||². "Sequential" is the
// order of the layers: run under CalibrateBlockwise (quant/calibrate.h) with the quantized
// weights returned as replacements, each block's inputs come from the already quantized blocks.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "base/thread_pool.h"
#include "quant/linear_stats.h"
#include "quant/output_error.h"
#include "quant/weight_grid.h"

namespace kite {

struct SeqMseOptions {
  int32_t candidates = 20;  // clip ratios, evenly from 1 down to lowest_ratio
  float lowest_ratio = 0.5f;
  int64_t max_samples = 128;  // sampled input rows scored (0: all the statistics hold)
};

// weight [out, in] (row-major) with its input statistics (samples needed). The result's
// `quantized` is the weight on `grid` with each row's chosen clip, `clipped` the weight clamped
// to it (for a target quantizer that searches its own scales), `ratio` [out] the clips.
Result<ClipSearchResult> SeqMse(std::string_view name, std::span<const float> weight, int64_t out,
                                const LinearInputStats& stats, const WeightGrid& grid,
                                const SeqMseOptions& options, ThreadPool* pool);

}  // namespace kite
