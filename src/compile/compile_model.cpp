#include "compile/compile_model.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "backends/npusim/support/chip_features.h"
#include "backends/registry.h"
#include "base/atomic_output.h"
#include "compile/graph_plan.h"
#include "compile/recipe_quantization.h"
#include "format/gguf.h"
#include "models/compiled_gguf.h"
#include "models/load_model.h"

namespace kite {

namespace {

// The quantized model compile reads: the input itself, or a file quantized from it beside the
// output, removed when compile is done (whether it succeeded or not).
class StagedModel {
 public:
  StagedModel() = default;
  StagedModel(const StagedModel&) = delete;
  StagedModel& operator=(const StagedModel&) = delete;
  ~StagedModel() {
    if (!owned_.empty()) {
      std::error_code ignored;
      std::filesystem::remove(owned_, ignored);
    }
  }
  // A path beside `output` no file has, for QuantizeModel to write and this to remove.
  Result<std::string> Claim(const std::string& output) {
    const std::string path = output + ".kite-compile-" + std::to_string(getpid()) + ".gguf";
    std::error_code error;
    if (std::filesystem::exists(std::filesystem::symlink_status(path, error))) {
      return InvalidInput(path +
                          " exists: compile quantizes into this name beside the output "
                          "and removes it; move that file away");
    }
    path_ = path;
    return path;
  }
  void Written() { owned_ = path_; }  // QuantizeModel committed it: this removes it
  void Use(const std::string& input) { path_ = input; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::string owned_;
};

// `chunk` 0 is the default, fitted to the contexts afterwards.
Result<std::vector<int32_t>> SortedContexts(std::vector<int32_t> contexts, int32_t chunk) {
  std::sort(contexts.begin(), contexts.end());
  contexts.erase(std::unique(contexts.begin(), contexts.end()), contexts.end());
  if (contexts.front() < 1) {
    return InvalidInput("--ctx " + std::to_string(contexts.front()) +
                        ": a context size is at least 1 position");
  }
  if (chunk < 0) {
    return InvalidInput("--prefill-chunk " + std::to_string(chunk) + ": expected >= 1");
  }
  if (chunk > contexts.back()) {
    return InvalidInput("--prefill-chunk " + std::to_string(chunk) +
                        " is longer than the largest context, " + std::to_string(contexts.back()));
  }
  return contexts;
}

std::string PlacementBackends(const std::string& asked) {
  if (!asked.empty()) return asked;
  const std::vector<std::string> registered = RegisteredBackends();
  const bool npusim = std::find(registered.begin(), registered.end(), "npusim") != registered.end();
  return npusim ? "npusim,cpu" : "cpu";
}

// Bytes an element of the recipe's activations and KV cache takes on the NPU (fp16 without
// integer encodings).
double WidthBytes(int32_t bits) { return bits > 0 ? bits / 8.0 : 2.0; }

}  // namespace

Result<CompileReport> CompileModel(const std::string& input, const std::string& output,
                                   const CompileOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  if (output.empty()) return InvalidInput("--output: give the compiled GGUF's path");
  const ChipFeatures chip = KITE_TRY(ReadChipFile(DefaultChipsDir(), options.chip)).features;
  if (options.session_limit == 0) return InvalidInput("--session-limit: expected > 0 bytes");
  {  // The output is checked (not an input, a regular file's place) before any work is done.
    KITE_TRY(AtomicOutput::Create(output, {input}));
  }
  CompileReport report;
  CompiledTarget& target = report.target;
  target.version = kCompileFormatVersion;
  target.chip = chip.name;
  target.hexagon = chip.hexagon;
  if (!options.contexts.empty()) {  // checked now, before any calibration
    target.contexts = KITE_TRY(SortedContexts(options.contexts, options.prefill_chunk));
  }
  target.session_limit = options.session_limit;
  std::optional<RecipeQuantization> asked;
  if (!options.recipe.empty()) asked = KITE_TRY(FindRecipeQuantization(options.recipe));

  // A quantized input keeps its recipe; a float one takes the asked (or default) one.
  std::optional<RecipeQuantization> recipe;
  if (input.ends_with(".gguf")) {
    const GgufFile gguf = KITE_TRY(GgufFile::Open(input));
    recipe = KITE_TRY(RecipeOfQuantizedFile(gguf));
    if (recipe && asked && recipe->recipe != asked->recipe) {
      return InvalidInput(input + " is quantized for recipe " + recipe->recipe + " (--type " +
                          recipe->weight_type + "), not " + asked->recipe +
                          ": give the float model to compile it as " + asked->recipe +
                          ", or --recipe " + recipe->recipe);
    }
  }
  const bool quantize = !recipe.has_value();
  if (quantize) recipe = asked ? *asked : KITE_TRY(FindRecipeQuantization("w4a16"));
  KITE_RETURN_IF_ERROR(CheckRecipeOnChip(*recipe, chip));
  target.recipe = recipe->recipe;

  StagedModel staged;
  if (quantize) {
    QuantizeModelOptions q = options.quantize;
    q.type = recipe->weight_type;
    q.activation_bits = recipe->activation_bits;
    q.kv_bits = recipe->activation_bits > 0 ? recipe->kv_bits : 0;
    const std::string path = KITE_TRY(staged.Claim(output));
    const QuantizeReport quantized = KITE_TRY(QuantizeModel(input, path, q));
    staged.Written();
    report.warnings = quantized.warnings;
    report.quantized = true;
  } else {
    staged.Use(input);
  }

  const std::unique_ptr<Model> model = KITE_TRY(LoadModel(staged.path()));
  if (target.contexts.empty()) {
    target.contexts = KITE_TRY(
        SortedContexts({std::min(model->config().context_length, kDefaultCompileContextCap)},
                       options.prefill_chunk));
  }
  target.prefill_chunk = options.prefill_chunk > 0
                             ? options.prefill_chunk
                             : std::min(kDefaultPrefillChunk, target.contexts.back());
  if (target.contexts.back() > model->config().context_length) {
    report.warnings.push_back(
        "context " + std::to_string(target.contexts.back()) + " is longer than the " +
        std::to_string(model->config().context_length) + " positions the model was trained on");
  }
  report.placed_on = PlacementBackends(options.backend);
  report.graphs = KITE_TRY(PlanGraphs(
      *model, {.contexts = target.contexts,
               .prefill_chunk = target.prefill_chunk,
               .session_limit = target.session_limit,
               .backend = report.placed_on,
               .chip = chip.name,
               .activation_bytes = WidthBytes(recipe->activation_bits),
               .kv_bytes = WidthBytes(recipe->activation_bits > 0 ? recipe->kv_bits : 0)}));
  target.graphs = report.graphs.dump();

  // The quantized file's keys and tensors as they are, with the compile keys.
  const GgufFile gguf = KITE_TRY(GgufFile::Open(staged.path()));
  GgufWriter writer(gguf.alignment());
  for (const auto& [key, value] : gguf.metadata()) writer.SetValue(key, value);
  WriteCompiledKeys(target, writer);
  for (const GgufTensorInfo& info : gguf.tensors()) {
    const TensorView view = gguf.View(info);
    KITE_RETURN_IF_ERROR(
        writer.AddTensor(info.name, info.dtype, info.shape,
                         std::span(static_cast<const uint8_t*>(view.data), info.bytes)));
  }
  KITE_RETURN_IF_ERROR(writer.Write(output, {input, staged.path()}));
  std::error_code error;
  report.file_bytes = std::filesystem::file_size(output, error);
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

}  // namespace kite
