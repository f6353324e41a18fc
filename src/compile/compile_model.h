// `kite compile`: a model to one GGUF ready for one chip, the counterpart of a QNN context
// binary (docs/compiled_gguf.md). A float model is quantized once with the recipe's layout and
// calibrated static encodings (quant/quantize_model.h, the `kite quantize` driver); a GGUF
// `kite quantize` already wrote with an NPU layout is taken as it is, without calibrating again.
// The output is that model's keys and tensors plus kite.compile.* (models/compiled_gguf.h): the
// chip, the recipe, and for every compiled context size the partition and session splits of a
// prefill chunk and a decode step (compile/graph_plan.h). It is written atomically.
//
//   CompileOptions options{.chip = "8gen3", .recipe = "w4a16", .contexts = {512, 4096}};
//   CompileReport report = KITE_TRY(CompileModel("model/", "model-8gen3.gguf", options));
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/status.h"
#include "models/compiled_target.h"
#include "quant/quantize_model.h"

namespace kite {

inline constexpr uint64_t kHtpSessionLimit = uint64_t{2} << 30;  // 2 GiB
// The default context, as the Engine's: long enough for chat, a KV cache a phone can hold.
inline constexpr int32_t kDefaultCompileContextCap = 4096;
inline constexpr int32_t kDefaultPrefillChunk = 128;  // the Engine's

struct CompileOptions {
  std::string chip;    // a chips/NAME.json
  std::string recipe;  // "": the quantized input's, w4a16 for a float one
  // Any order; sorted, repeats dropped. Empty: the model's trained context, at most
  // kDefaultCompileContextCap.
  std::vector<int32_t> contexts;
  int32_t prefill_chunk = 0;  // 0: kDefaultPrefillChunk, or the largest context when shorter
  uint64_t session_limit = kHtpSessionLimit;
  // The placement's backends (backends/registry.h): "" places on "npusim,cpu" when the npusim
  // backend is registered, else on "cpu".
  std::string backend;
  // The quantizer's calibration (windows, calib file name), threads and progress; its type,
  // activation and KV widths are the recipe's.
  QuantizeModelOptions quantize;
};

struct CompileReport {
  CompiledTarget target;
  std::string placed_on;          // the backend preference the graphs were placed with
  bool quantized = false;         // the input was quantized (and calibrated) here
  nlohmann::ordered_json graphs;  // PlanGraphs' document
  uint64_t file_bytes = 0;
  std::vector<std::string> warnings;
  double seconds = 0;
};

Result<CompileReport> CompileModel(const std::string& input, const std::string& output,
                                   const CompileOptions& options);

}  // namespace kite
