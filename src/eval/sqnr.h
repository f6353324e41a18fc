// Layer-wise SQNR: "which layer broke my model". The quantized and the reference model run the
// same windows side by side, each watched by an Observer (runtime/observer.h); nodes of the two
// graphs are matched by name ("blk.3.attn_q"). For every linear output (a matmul of a weight) and
// every quantized activation (a value with an encoding, dequantized) of the quantized model:
//
//   SQNR = 10 log10(Σ ref² / Σ (ref - quant)²)   dB, over all elements of all windows
//
// per tensor, and per layer over the tensors of the layer (Σ of both sums). Isolated by default:
// after a node is measured its output is replaced by the reference's, so every node computes
// from the reference's inputs and its SQNR is the error it adds itself, not what earlier layers
// passed on (with `propagate` the two models run apart and errors accumulate down the layers).
// A tensor or layer more than `flag_db` below the median of its kind is flagged.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "eval/scoring_plan.h"
#include "runtime/engine.h"

namespace kite {

struct SqnrOptions {
  ScoringOptions scoring;  // the windows both models run (only their inputs matter)
  bool propagate = false;
  double flag_db = 6.0;
};

struct TensorSqnr {
  std::string name;       // the node's name
  std::string kind;       // "linear" or "activation"
  int32_t layer = -1;     // blk.N: N; the head (output*): n_layers; the embedding: -1
  double signal = 0.0;    // Σ ref²
  double noise = 0.0;     // Σ (ref - quant)²
  double sqnr_db = 0.0;   // +inf when noise is 0
  bool flagged = false;
};

struct LayerSqnr {
  int32_t layer = -1;
  double signal = 0.0;
  double noise = 0.0;
  double sqnr_db = 0.0;
  std::string worst;  // the layer's tensor with the lowest SQNR
  bool flagged = false;
};

struct SqnrReport {
  std::vector<TensorSqnr> tensors;  // worst first
  std::vector<LayerSqnr> layers;    // in layer order
  double median_tensor_db = 0.0;
  double median_layer_db = 0.0;
  int64_t tokens = 0;
  int64_t windows = 0;
  int32_t n_layers = 0;
};

// (windows done, windows in all)
using SqnrProgress = std::function<void(int64_t, int64_t)>;

Result<SqnrReport> ComputeSqnr(const Engine& quant, const Engine& reference, std::string_view text,
                               const SqnrOptions& options, const SqnrProgress& progress = nullptr);

// 10 log10(signal / noise); +inf for no noise.
double SqnrDb(double signal, double noise);

}  // namespace kite
