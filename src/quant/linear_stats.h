// What calibration learns about the inputs of the model's linear layers and its activations:
// plain data, filled by quant/calibrate.h and read by every algorithm that needs it (the
// importance matrix, AWQ, SmoothQuant, GPTQ, SeqMSE, the static activation encodings).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace kite {

// The rows x (one per token) that reached one linear layer's input, summarized per input
// column j. Keyed by the weight the layer multiplies (e.g. "blk.0.attn_q.weight"); layers that
// share an input (q, k and v) each get their own copy, as llama.cpp's importance matrix has.
struct LinearInputStats {
  int64_t columns = 0;
  int64_t rows_seen = 0;         // tokens that went through the layer
  std::vector<double> sum_sq;    // Σ x_j²: llama.cpp's importance matrix is sum_sq / rows_seen
  std::vector<double> abs_sum;   // Σ |x_j| (AWQ's mean activation magnitude)
  std::vector<float> abs_max;    // max |x_j| (SmoothQuant)
  // Up to the requested number of rows [samples_rows, columns], taken evenly over the
  // calibration tokens (AWQ's and SeqMSE's output-error checks).
  std::vector<float> samples;
  int64_t samples_rows = 0;
  // X^T X [columns, columns], row-major, only when requested (GPTQ's Hessian / 2).
  std::vector<double> gram;
};

// One activation value (a node's output, keyed by node name, e.g. "blk.3.attn_norm"), for its
// static encoding: the range seen and a histogram over it for Percentile, MSE and SQNR.
struct ActivationStats {
  int64_t count = 0;
  float min = 0.0f;
  float max = 0.0f;
  // Histogram of the values over [hist_lo, hist_hi] in hist.size() equal bins.
  float hist_lo = 0.0f;
  float hist_hi = 0.0f;
  std::vector<uint64_t> hist;
};

struct CalibrationStats {
  std::map<std::string, LinearInputStats> linears;     // by weight name
  std::map<std::string, ActivationStats> activations;  // by node name
  int64_t tokens = 0;                                  // calibration tokens run
};

}  // namespace kite
