// Calibration: running the float model over calibration text and recording what reaches each
// linear layer (LinearInputStats) and each activation (ActivationStats), the data every
// calibrated quantizer needs (importance matrix, AWQ, GPTQ, SmoothQuant, SeqMSE, static
// activation encodings).
//
// The model runs block by block (Model::BuildBlock), every calibration token's residual stream
// kept between blocks, so that an algorithm may quantize block L from its statistics and have
// block L + 1 see what the quantized block L computes (GPTQ's sequential quantization):
//
//   std::vector<std::vector<int32_t>> windows = KITE_TRY(CalibrationWindows(tokenizer, text,
//                                                                      "kjv.txt", {}));
//   KITE_RETURN_IF_ERROR(CalibrateBlockwise(model, windows, {.gram = true},
//       [&](int32_t layer, CalibrationStats& stats) -> Result<WeightReplacements> {
//         return QuantizeBlock(layer, stats);  // replacement weights, or {} to keep them
//       }));
//
// The head (final norm -> "output.weight", or "token_embd.weight" when tied) is reported last,
// as layer == n_layers.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "models/model.h"
#include "quant/linear_stats.h"
#include "tokenizer/tokenizer.h"

namespace kite {

// How calibration text becomes windows of token ids.
struct CalibrationTextOptions {
  int64_t tokens = 16384;  // calibration tokens in all (--calib-tokens)
  int32_t window = 512;    // tokens per window, each run as one sequence from position 0
  // Instruct models: each window is a conversation written by the model's chat template (or the
  // built-in one named by chat_template), a line of the text as a user's turn and the next
  // three as the assistant's, so calibration sees the tokens the model will run on.
  bool chat = false;
  std::string chat_template = "";
};

// The windows of `text` (`source` names it in errors): `tokens` ids cut into windows of
// `window` (the last one shorter when tokens is not a multiple), each starting with BOS when
// the tokenizer adds one (chat: as the template starts a conversation). InvalidInput naming the
// source and how many tokens it had when the text is too short, or when the options are out of
// range.
Result<std::vector<std::vector<int32_t>>> CalibrationWindows(const Tokenizer& tokenizer,
                                                             std::string_view text,
                                                             std::string_view source,
                                                             const CalibrationTextOptions& options);

struct CalibrationRequest {
  bool gram = false;         // LinearInputStats::gram (GPTQ): columns² doubles per linear
  int64_t max_samples = 0;   // LinearInputStats::samples: up to this many rows per linear
  bool activations = false;  // ActivationStats of every node output (static encodings)
  int32_t hist_bins = 2048;  // bins of each activation histogram
  // Whether the head (final norm and lm_head) runs; its matmul only when activations are asked
  // for (the logits' range), the final norm's output always (the lm_head's input statistics).
  bool head = true;
  std::string backend = "cpu";  // preference list (backends/registry.h); ref is the fallback
  int32_t threads = 0;          // 0: every CPU
};

// A layer callback's answer: weights of the block that just ran, by canonical name, as f32 of
// the weight's shape; the next block's input is then computed with them. Empty: keep them.
using WeightReplacements = std::map<std::string, std::vector<float>>;
// Called after block `layer` ran over every window, with the statistics of that block's linears
// and activations (the callback may move them out). An error stops calibration. What it returns
// for the head (layer == n_layers) is not used: no block follows.
using LayerCallback = std::function<Result<WeightReplacements>(int32_t layer, CalibrationStats&)>;
// Steps done of total: one per window per block (and per window of the head).
using CalibrationProgress = std::function<void(int64_t done, int64_t total)>;

// Runs the float model block by block over `windows` (each at most the model's context), as
// described above. Linear statistics are keyed by the weight the matmul reads, activation
// statistics by the node (the same names as in Model::BuildGraph's graph; the embedding's
// output is "token_embd", reported with block 0).
Status CalibrateBlockwise(const Model& model, std::span<const std::vector<int32_t>> windows,
                          const CalibrationRequest& request, const LayerCallback& on_layer,
                          const CalibrationProgress& progress = nullptr);

// Every block's statistics together, the float model unchanged.
Result<CalibrationStats> CollectCalibrationStats(const Model& model,
                                                 std::span<const std::vector<int32_t>> windows,
                                                 const CalibrationRequest& request,
                                                 const CalibrationProgress& progress = nullptr);

// Accumulators, exposed for the whole-graph observer in tests and for eval's comparisons: both
// add one batch of rows at a time, in calibration order, so that the same values in the same
// order give the same statistics however they are grouped.

// Adds rows x [rows, columns] to `stats` (columns set on first use). `sample_stride` > 0 keeps
// every sample_stride-th row counted from the first row ever seen, up to `max_samples`.
void AccumulateLinearInput(const float* x, int64_t rows, int64_t columns, bool gram,
                           int64_t max_samples, int64_t sample_stride, LinearInputStats& stats);
// Fills the lower triangle of a gram accumulated as its upper triangle.
void FinishGram(LinearInputStats& stats);

// Adds `values` to `stats` (a histogram of `bins` over the range seen so far; the range widens
// by merging whole bins, so no value is ever dropped or counted twice).
void AccumulateActivation(std::span<const float> values, int32_t bins, ActivationStats& stats);

}  // namespace kite
