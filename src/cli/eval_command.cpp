// `kite eval ppl -m MODEL -f TEXT --ctx N [--json]`: perplexity (see eval/perplexity.h).
#include <unistd.h>

#include <cstdio>
#include <memory>

#include <nlohmann/json.hpp>

#include "base/mapped_file.h"
#include "cli/command.h"
#include "cli/kv_type_flag.h"
#include "eval/perplexity.h"

namespace kite::cli {

namespace {

struct PplOptions {
  std::string model;
  std::string text_file;
  int32_t window = 512;
  std::string backend = "cpu";
  int32_t threads = 0;
  DType kv_type = DType::kF16;
  bool json = false;
};

Status RunPerplexity(const PplOptions& options) {
  const std::string text = KITE_TRY(ReadTextFile(options.text_file));
  EngineOptions engine_options;
  engine_options.context_length = options.window;
  engine_options.backend = options.backend;
  engine_options.threads = options.threads;
  engine_options.kv_dtype = options.kv_type;
  // Scores every position, so a window is one prefill; no need to keep F16 rounding in the cache.
  engine_options.prefill_chunk = options.window;
  auto engine = KITE_TRY(Engine::Load(options.model, engine_options));
  // On a terminal the running figure is rewritten in place; into a file or pipe (a script's log)
  // only the last window is written, on a line of its own.
  const bool tty = ::isatty(STDERR_FILENO) == 1;
  const auto progress = [&](int64_t done, int64_t total, double ppl) {
    if (!tty && done != total) return;
    std::fprintf(stderr, "%swindow %lld/%lld  ppl %.4f%s", tty ? "\r" : "",
                 static_cast<long long>(done), static_cast<long long>(total), ppl,
                 done == total ? "\n" : "");
  };
  const PerplexityResult result = KITE_TRY(ComputePerplexity(*engine, text, options.window, progress));
  if (options.json) {
    const nlohmann::ordered_json out = {{"ppl", result.ppl},
                                        {"tokens", result.tokens},
                                        {"windows", result.windows},
                                        {"nll", result.nll},
                                        {"ctx", options.window},
                                        {"kv_type", std::string(DTypeName(options.kv_type))}};
    std::printf("%s\n", out.dump().c_str());
  } else {
    std::printf("perplexity %.4f over %lld tokens in %lld windows of %d (NLL %.4f nats)\n", result.ppl,
                static_cast<long long>(result.tokens), static_cast<long long>(result.windows),
                options.window, result.nll);
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
  ppl->add_option("--ctx", options->window, "Window length in tokens (default 512)");
  ppl->add_option("--backend", options->backend, "Backend to run on: cpu or ref (default cpu)");
  ppl->add_option("-t,--threads", options->threads, "Threads of the cpu backend (default: all cores)")
      ->check(CLI::Range(0, 1024));
  AddKvTypeFlag(ppl, &options->kv_type);
  ppl->add_flag("--json", options->json, "Print {ppl, tokens, windows, nll, ctx, kv_type} as JSON");
  ppl->callback([options, exit_code] {
    if (auto status = RunPerplexity(*options); !status) *exit_code = ReportError(status.error());
  });
}

}  // namespace kite::cli
