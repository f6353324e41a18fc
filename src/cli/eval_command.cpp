// `kite eval ppl -m MODEL -f TEXT --ctx N [--json]`: perplexity (see eval/perplexity.h).
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>

#include <nlohmann/json.hpp>

#include "base/mapped_file.h"
#include "cli/command.h"
#include "cli/setting_flags.h"
#include "eval/perplexity.h"
#include "runtime/model_files.h"

namespace kite::cli {

namespace {

// The window without --ctx, unless the model was trained on fewer positions.
constexpr int32_t kDefaultWindow = 512;

struct PplOptions {
  std::string model;
  std::string text_file;
  std::optional<int32_t> window;  // --ctx
  std::string backend = "cpu";
  int32_t threads = 0;
  bool check_tensors = false;
  DType kv_type = DType::kF16;
  bool quantized_activations = true;
  bool json = false;
};

Status RunPerplexity(const PplOptions& options) {
  const std::string text = KITE_TRY(ReadTextFile(options.text_file, kTextFileLimit));
  ModelFiles files = KITE_TRY(LoadModelFiles(options.model));
  // Past its trained positions a model predicts worse: the default window never goes there.
  const int32_t window = options.window.value_or(std::min(kDefaultWindow, files.model->config().context_length));
  EngineOptions engine_options;
  engine_options.context_length = window;
  engine_options.backend = options.backend;
  engine_options.threads = options.threads;
  engine_options.check_tensors = options.check_tensors;
  engine_options.kv_dtype = options.kv_type;
  engine_options.quantized_activations = options.quantized_activations;
  // Scores every position, so a window is one prefill; no need to keep F16 rounding in the cache.
  engine_options.prefill_chunk = window;
  auto engine = KITE_TRY(Engine::Create(std::move(files), engine_options));
  PrintWarnings(engine->warnings());
  // On a terminal the running figure is rewritten in place; into a file or pipe (a script's log)
  // only the last window is written, on a line of its own.
  const bool tty = ::isatty(STDERR_FILENO) == 1;
  const auto progress = [&](int64_t done, int64_t total, double ppl) {
    if (!tty && done != total) return;
    std::fprintf(stderr, "%swindow %lld/%lld  ppl %.4f%s", tty ? "\r" : "",
                 static_cast<long long>(done), static_cast<long long>(total), ppl,
                 done == total ? "\n" : "");
  };
  const PerplexityResult result = KITE_TRY(ComputePerplexity(*engine, text, window, progress));
  if (options.json) {
    const nlohmann::ordered_json out = {{"ppl", result.ppl},
                                        {"tokens", result.tokens},
                                        {"windows", result.windows},
                                        {"nll", result.nll},
                                        {"ctx", window},
                                        {"kv_type", std::string(DTypeName(options.kv_type))}};
    std::printf("%s\n", out.dump().c_str());
  } else {
    std::printf("perplexity %.4f over %lld tokens in %lld windows of %d (NLL %.4f nats)\n", result.ppl,
                static_cast<long long>(result.tokens), static_cast<long long>(result.windows),
                window, result.nll);
  }
  return Ok();
}

}  // namespace

void AddEvalCommand(CLI::App& app, int* exit_code) {
  CLI::App* eval = app.add_subcommand("eval", "Measure a model");
  eval->require_subcommand(1);
  auto options = std::make_shared<PplOptions>();
  CLI::App* ppl = eval->add_subcommand(
      "ppl",
      "Perplexity: the text is tokenized once without BOS, cut into windows of --ctx tokens, each "
      "scored from [BOS] + window[:-1]; ppl = exp(total NLL / tokens)");
  ppl->add_option("-m,--model", options->model, "A Hugging Face model folder or a .gguf file")->required();
  ppl->add_option("-f,--file", options->text_file, "The text to score")->required();
  ppl->add_option_function<int32_t>(
      "-c,--ctx,--ctx-size", [options](const int32_t& window) { options->window = window; },
      "Window length in tokens (default 512, or the model's trained context when shorter)");
  auto settings = std::make_shared<SettingFlags>(
      ppl, std::vector<std::string>{"backend", "threads", "check_tensors", "kv_type",
                                    "float_activations"});
  ppl->add_flag("--json", options->json, "Print {ppl, tokens, windows, nll, ctx, kv_type} as JSON");
  ppl->callback([options, settings, exit_code] {
    RunSettings chosen;
    PrintWarnings(settings->ApplyTo(&chosen));
    options->backend = chosen.engine.backend;
    options->threads = chosen.engine.threads;
    options->check_tensors = chosen.engine.check_tensors;
    options->kv_type = chosen.engine.kv_dtype;
    options->quantized_activations = chosen.engine.quantized_activations;
    if (auto status = RunPerplexity(*options); !status) *exit_code = ReportError(status.error());
  });
}

}  // namespace kite::cli
