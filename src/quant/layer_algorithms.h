// The calibrated algorithms of `kite quantize` for one block at a time, in the order they
// compose, as the layer callback of quant/calibrate.h (CalibrateBlockwise) runs them:
//
//   1. scales: SmoothQuant's s (activation range into the weights) and AWQ's searched s (on the
//      smoothed weights) at every site of the block, multiplied into one scale per site and
//      folded into the weights by graph/passes/fold_channel_scale (exact); the consumers' input
//      statistics divided by the same scales.
//   2. each linear onto its grid: GPTQ (Hessian from the scaled Gram), else SeqMSE (per-channel
//      clip), else AWQ's clipping search (per group), else left float for the format's own
//      round to nearest.
//
// The result is every weight the algorithms changed, f32 by canonical name: the replacements
// the callback returns (so the next block calibrates on this block's quantized outputs) and
// what the driver quantizes to the chosen type in place of the originals. Hadamard rotation is
// not here: it is data-free and changes the whole model before calibration (RotateModel in
// quant/hadamard.h).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/thread_pool.h"
#include "models/model.h"
#include "quant/awq.h"
#include "quant/fold_scales.h"
#include "quant/gptq.h"
#include "quant/linear_stats.h"
#include "quant/seqmse.h"
#include "quant/smoothquant.h"
#include "quant/weight_grid.h"

namespace kite {

struct AlgorithmOptions {
  bool smoothquant = false;
  SmoothQuantOptions smoothquant_options = {};
  bool awq = false;
  AwqOptions awq_options = {};
  bool gptq = false;
  GptqOptions gptq_options = {};
  bool seqmse = false;
  SeqMseOptions seqmse_options = {};

  bool any() const { return smoothquant || awq || gptq || seqmse; }
  // What calibration must collect for them (quant/calibrate.h CalibrationRequest).
  bool needs_gram() const { return gptq; }
  int64_t samples_needed() const {
    return std::max(awq ? awq_options.max_samples : 0, seqmse ? seqmse_options.max_samples : 0);
  }
};

// The grid a weight is quantized onto (MakeWeightGrid of the type the driver chose for it), or
// nullptr to leave it to the format (it is still rescaled by the folds).
using GridForWeight = std::function<Result<std::unique_ptr<WeightGrid>>(const std::string& name)>;

// The grid codes and scales GPTQ chose for a weight ([out, in] and [out, groups]).
struct GridCodes {
  std::vector<int32_t> codes;
  std::vector<GroupScale> scales;
};

struct LayerQuantization {
  // Every weight the algorithms changed, f32: the replacements the calibration callback
  // returns, and what the driver quantizes to the chosen type.
  FoldedWeights weights;
  // GPTQ's codes and scales by weight name: write these exactly (quant/grid_pack.h PackOnGgml
  // for q4_0/q4_1/q5_0/q5_1/q8_0, an NPU quantizer taking given scales) rather than letting a
  // format refit its scales to `weights` (which loses much of GPTQ's gain).
  std::map<std::string, GridCodes> codes;
};

// Block `layer` (layer == n_layers: the head, output_norm -> output) of `model` with `stats`
// (that block's, keyed by weight name). Errors name the weight or site.
Result<LayerQuantization> QuantizeLayer(const Model& model, int32_t layer,
                                        const CalibrationStats& stats,
                                        const AlgorithmOptions& options,
                                        const GridForWeight& grid_for, ThreadPool* pool);

}  // namespace kite
