// `kite eval ppl -m MODEL -f TEXT [--protocol kite|llama] [--ctx N] [--chunks N] [--json]`:
// perplexity (see eval/perplexity.h and eval/scoring_plan.h).
#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>

#include <nlohmann/json.hpp>

#include "base/mapped_file.h"
#include "cli/command.h"
#include "cli/eval_progress.h"
#include "cli/setting_flags.h"
#include "eval/perplexity.h"
#include "runtime/model_files.h"

namespace kite::cli {

namespace {

// The window without --ctx, unless the model was trained on fewer positions.
constexpr int32_t kDefaultWindow = 512;
// The llama protocol scores a fixed subset by default: the first 32 chunks (16,384 tokens at
// --ctx 512), so a figure is quick and the same from run to run whatever the file's length.
constexpr int64_t kDefaultLlamaChunks = 32;

struct PplOptions {
  std::string model;
  std::string text_file;
  std::optional<int32_t> window;  // --ctx
  std::string protocol = "kite";
  std::optional<int64_t> chunks;  // --chunks
  std::string backend = "cpu";
  int32_t threads = 0;
  bool check_tensors = false;
  DType kv_type = DType::kF16;
  bool json = false;
};

Status RunPerplexity(const PplOptions& options) {
  const ScoringProtocol protocol = KITE_TRY(ParseScoringProtocol(options.protocol));
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
  // Scores every position, so a window is one prefill; no need to keep F16 rounding in the cache.
  engine_options.prefill_chunk = window;
  auto engine = KITE_TRY(Engine::Create(std::move(files), engine_options));
  PrintWarnings(engine->warnings());
  ScoringOptions scoring{.protocol = protocol, .ctx = window};
  scoring.max_windows =
      options.chunks.value_or(protocol == ScoringProtocol::kLlama ? kDefaultLlamaChunks : 0);
  const EtaProgress eta("window");
  const auto progress = [&](int64_t done, int64_t total, double ppl) {
    char figure[32];
    std::snprintf(figure, sizeof(figure), "ppl %.4f", ppl);
    eta.Update(done, total, figure);
  };
  const PerplexityResult result = KITE_TRY(ComputePerplexity(*engine, text, scoring, progress));
  if (options.json) {
    const nlohmann::ordered_json out = {{"ppl", result.ppl},
                                        {"ppl_error", result.ppl_error},
                                        {"protocol", options.protocol},
                                        {"tokens", result.tokens},
                                        {"windows", result.windows},
                                        {"nll", result.nll},
                                        {"ctx", window},
                                        {"kv_type", std::string(DTypeName(options.kv_type))}};
    std::printf("%s\n", out.dump().c_str());
  } else {
    std::printf("perplexity %.4f +/- %.5f over %lld tokens in %lld windows of %d, %s protocol (NLL %.4f nats)\n",
                result.ppl, result.ppl_error, static_cast<long long>(result.tokens),
                static_cast<long long>(result.windows), window, options.protocol.c_str(), result.nll);
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
      "Perplexity, ppl = exp(total NLL / scored tokens). --protocol kite: the text is tokenized "
      "once without BOS, cut into windows of --ctx tokens, each scored from [BOS] + window[:-1]. "
      "--protocol llama: llama.cpp perplexity's chunks of --ctx tokens, BOS first, the second "
      "half of each scored");
  ppl->add_option("-m,--model", options->model, "A Hugging Face model folder or a .gguf file")->required();
  ppl->add_option("-f,--file", options->text_file, "The text to score")->required();
  ppl->add_option_function<int32_t>(
      "-c,--ctx,--ctx-size", [options](const int32_t& window) { options->window = window; },
      "Window length in tokens (default 512, or the model's trained context when shorter)");
  ppl->add_option("--protocol", options->protocol, "Scoring windows: kite (default) or llama");
  ppl->add_option_function<int64_t>(
      "--chunks", [options](const int64_t& chunks) { options->chunks = chunks; },
      "Score only the first N windows (0: all; default: all for kite, 32 for llama)");
  auto settings = std::make_shared<SettingFlags>(
      ppl, std::vector<std::string>{"backend", "threads", "check_tensors", "kv_type"});
  ppl->add_flag("--json", options->json, "Print {ppl, ppl_error, protocol, tokens, windows, nll, ctx, kv_type} as JSON");
  ppl->callback([options, settings, exit_code] {
    RunSettings chosen;
    PrintWarnings(settings->ApplyTo(&chosen));
    options->backend = chosen.engine.backend;
    options->threads = chosen.engine.threads;
    options->check_tensors = chosen.engine.check_tensors;
    options->kv_type = chosen.engine.kv_dtype;
    if (auto status = RunPerplexity(*options); !status) *exit_code = ReportError(status.error());
  });
}

}  // namespace kite::cli
