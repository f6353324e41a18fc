// `kite eval ppl -m MODEL -f TEXT [--protocol kite|llama] [--ctx N] [--chunks N] [--json]`:
// perplexity (see eval/perplexity.h and eval/scoring_plan.h).
// `kite eval compare -m QUANT --ref FLOAT -f TEXT [--ref-logits FILE] [--json]`: a quantized
// model against its reference (eval/compare.h).
// `kite eval sqnr -m QUANT --ref FLOAT -f TEXT [--plot FILE.svg] [--json]`: per-layer and
// per-tensor SQNR (eval/sqnr.h).
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>

#include <nlohmann/json.hpp>

#include "base/atomic_output.h"
#include "base/mapped_file.h"
#include "cli/command.h"
#include "cli/eval_compare_report.h"
#include "cli/eval_progress.h"
#include "cli/eval_sqnr_report.h"
#include "cli/setting_flags.h"
#include "eval/compare.h"
#include "eval/compare_stats.h"
#include "eval/perplexity.h"
#include "eval/sqnr.h"
#include "eval/sqnr_plot.h"
#include "runtime/model_files.h"
#include "runtime/model_identity.h"

namespace kite::cli {

namespace {

// The window without --ctx, unless the model was trained on fewer positions.
constexpr int32_t kDefaultWindow = 512;
// SQNR needs fewer tokens than a perplexity: by default 4 windows of 128.
constexpr int32_t kDefaultSqnrWindow = 128;
constexpr int64_t kDefaultSqnrChunks = 4;
// The llama protocol scores a fixed subset by default: the first 32 chunks (16,384 tokens at
// --ctx 512), so a figure is quick and the same from run to run whatever the file's length.
constexpr int64_t kDefaultLlamaChunks = 32;

// What every `kite eval` subcommand takes.
struct EvalOptions {
  std::string model;
  std::string text_file;
  std::optional<int32_t> window;  // --ctx
  std::string protocol;
  std::optional<int64_t> chunks;  // --chunks
  RunSettings settings;
  bool json = false;
};

EngineOptions EngineOptionsFor(const RunSettings& settings, int32_t window) {
  EngineOptions engine_options;
  engine_options.context_length = window;
  engine_options.backend = settings.engine.backend;
  engine_options.threads = settings.engine.threads;
  engine_options.chip = settings.engine.chip;
  engine_options.check_tensors = settings.engine.check_tensors;
  engine_options.amx = settings.engine.amx;
  engine_options.kv_dtype = settings.engine.kv_dtype;
  engine_options.quantized_activations = settings.engine.quantized_activations;
  // Scores every position, so a window is one prefill; no need to keep F16 rounding in the cache.
  engine_options.prefill_chunk = window;
  return engine_options;
}

// Loads `path` for scoring windows of `*window` tokens; without --ctx the window is the default,
// or the model's trained context when shorter (past its trained positions a model predicts
// worse), or a compiled model's largest context, and `*window` is set to it.
Result<std::unique_ptr<Engine>> LoadForEval(const std::string& path, const EvalOptions& options,
                                            std::optional<int32_t>* window) {
  ModelFiles files = KITE_TRY(LoadModelFiles(path));
  if (!window->has_value()) {
    const ModelConfig& config = files.model->config();
    // A compiled model runs only the contexts it was compiled for.
    const int32_t longest = config.compiled ? config.compiled->contexts.back() : config.context_length;
    *window = std::min({kDefaultWindow, config.context_length, longest});
  }
  const EngineOptions engine_options = EngineOptionsFor(options.settings, **window);
  auto engine = KITE_TRY(Engine::Create(std::move(files), engine_options));
  PrintWarnings(engine->warnings());
  return engine;
}

Result<ScoringOptions> ScoringFor(const EvalOptions& options, int32_t window) {
  const ScoringProtocol protocol = KITE_TRY(ParseScoringProtocol(options.protocol));
  ScoringOptions scoring{.protocol = protocol, .ctx = window};
  scoring.max_windows =
      options.chunks.value_or(protocol == ScoringProtocol::kLlama ? kDefaultLlamaChunks : 0);
  return scoring;
}

Status RunPerplexity(const EvalOptions& options) {
  KITE_RETURN_IF_ERROR(ParseScoringProtocol(options.protocol));
  const std::string text = KITE_TRY(ReadTextFile(options.text_file, kTextFileLimit));
  std::optional<int32_t> window = options.window;
  auto engine = KITE_TRY(LoadForEval(options.model, options, &window));
  const ScoringOptions scoring = KITE_TRY(ScoringFor(options, *window));
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
                                        {"ctx", *window},
                                        {"kv_type", std::string(DTypeName(options.settings.engine.kv_dtype))}};
    std::printf("%s\n", out.dump().c_str());
  } else {
    std::printf("perplexity %.4f +/- %.5f over %lld tokens in %lld windows of %d, %s protocol (NLL %.4f nats)\n",
                result.ppl, result.ppl_error, static_cast<long long>(result.tokens),
                static_cast<long long>(result.windows), *window, options.protocol.c_str(), result.nll);
  }
  return Ok();
}

struct CompareCliOptions {
  std::string reference;   // --ref
  std::string ref_logits;  // --ref-logits
  std::string dump;        // --dump
};

// Removes a temporary reference-logits file however the command ends.
struct RemoveOnExit {
  std::string path;
  ~RemoveOnExit() {
    std::error_code ignored;
    if (!path.empty()) std::filesystem::remove(path, ignored);
  }
};

Status RunCompare(const EvalOptions& options, const CompareCliOptions& compare) {
  KITE_RETURN_IF_ERROR(ParseScoringProtocol(options.protocol));
  const std::string text = KITE_TRY(ReadTextFile(options.text_file, kTextFileLimit));
  std::error_code error;
  const bool cached = !compare.ref_logits.empty() && std::filesystem::exists(compare.ref_logits, error);
  if (!cached && compare.reference.empty()) {
    return InvalidInput(compare.ref_logits.empty()
                            ? std::string("give the reference model (--ref) or its cached logits (--ref-logits)")
                            : compare.ref_logits + ": no such file, and no --ref model to compute it from");
  }
  CompareOptions compare_options;
  compare_options.dump = compare.dump;
  compare_options.inputs = {options.model, options.text_file};
  if (!compare.reference.empty()) compare_options.inputs.push_back(compare.reference);
  // Without --ref-logits the reference's distributions still go to a file (a temporary one), so
  // that the two models are never in memory together.
  RemoveOnExit temporary;
  compare_options.ref_logits = compare.ref_logits;
  if (compare.ref_logits.empty()) {
    temporary.path = (std::filesystem::temp_directory_path() /
                      ("kite-ref-logits-" + std::to_string(::getpid()) + ".tmp")).string();
    compare_options.ref_logits = temporary.path;
  }
  // The quantized model's trained context sets the default window. Its files are closed again
  // until the reference pass is over, so that one model at a time is open.
  int32_t window = 0;
  {
    const ModelFiles probe = KITE_TRY(LoadModelFiles(options.model));
    window = options.window.value_or(std::min(kDefaultWindow, probe.model->config().context_length));
  }
  compare_options.scoring = KITE_TRY(ScoringFor(options, window));
  EngineOptions engine_options = EngineOptionsFor(options.settings, window);
  if (!cached) {
    ModelFiles files = KITE_TRY(LoadModelFiles(compare.reference));
    compare_options.reference_identity = ModelIdentity(*files.model);  // before packing (compare.h)
    auto reference = KITE_TRY(Engine::Create(std::move(files), engine_options));
    PrintWarnings(reference->warnings());
    const EtaProgress eta("reference window");
    KITE_RETURN_IF_ERROR(WriteReferenceLogits(*reference, text, compare_options,
                                              [&](int64_t done, int64_t total, double) { eta.Update(done, total, ""); }));
  } else if (!compare.reference.empty()) {
    const ModelFiles reference = KITE_TRY(LoadModelFiles(compare.reference));
    compare_options.reference_identity = ModelIdentity(*reference.model);
  }
  auto quant = KITE_TRY(Engine::Create(KITE_TRY(LoadModelFiles(options.model)), engine_options));
  PrintWarnings(quant->warnings());
  const EtaProgress eta("window");
  const auto progress = [&](int64_t done, int64_t total, double kld) {
    char figure[32];
    std::snprintf(figure, sizeof(figure), "KLD %.6f", kld);
    eta.Update(done, total, figure);
  };
  const CompareRun run = KITE_TRY(CompareModels(*quant, text, compare_options, progress));
  const CompareStats stats = Summarize(run.tokens);
  if (options.json) {
    nlohmann::ordered_json out = {{"protocol", options.protocol},
                                  {"ctx", window},
                                  {"windows", run.windows},
                                  {"reference", cached ? "cache" : "model"}};
    out.update(CompareJson(stats));
    std::printf("%s\n", out.dump().c_str());
  } else {
    std::printf("%lld windows of %d, %s protocol; reference from the %s%s\n\n",
                static_cast<long long>(run.windows), window, options.protocol.c_str(),
                cached ? "cache " : "model", cached ? compare.ref_logits.c_str() : "");
    std::printf("%s", CompareText(stats).c_str());
  }
  return Ok();
}

struct SqnrCliOptions {
  std::string reference;  // --ref
  std::string plot;       // --plot
  bool propagate = false;
  double flag_db = 6.0;
  int32_t top = 20;
};

std::string FileName(const std::string& path) {
  const std::string name = std::filesystem::path(path).filename().string();
  return name.empty() ? path : name;
}

Status RunSqnr(const EvalOptions& options, const SqnrCliOptions& sqnr) {
  const std::string text = KITE_TRY(ReadTextFile(options.text_file, kTextFileLimit));
  std::optional<int32_t> window = options.window.value_or(kDefaultSqnrWindow);
  auto quant = KITE_TRY(LoadForEval(options.model, options, &window));
  auto reference = KITE_TRY(LoadForEval(sqnr.reference, options, &window));
  const SqnrOptions sqnr_options{
      .scoring = {.protocol = ScoringProtocol::kKite, .ctx = *window,
                  .max_windows = options.chunks.value_or(kDefaultSqnrChunks)},
      .propagate = sqnr.propagate,
      .flag_db = sqnr.flag_db};
  // The plot is written atomically, and not over an input.
  std::optional<AtomicOutput> plot;
  if (!sqnr.plot.empty()) {
    plot.emplace(KITE_TRY(AtomicOutput::Create(sqnr.plot, {options.model, sqnr.reference, options.text_file})));
  }
  const EtaProgress eta("window");
  const auto progress = [&](int64_t done, int64_t total) { eta.Update(done, total, "SQNR"); };
  const SqnrReport report = KITE_TRY(ComputeSqnr(*quant, *reference, text, sqnr_options, progress));
  if (plot) {
    KITE_RETURN_IF_ERROR(plot->Write(SqnrPlotSvg(report, "SQNR per layer: " + FileName(options.model) + " vs " + FileName(sqnr.reference))));
    KITE_RETURN_IF_ERROR(plot->Commit());
  }
  if (options.json) {
    std::printf("%s\n", SqnrJson(report, sqnr_options).dump().c_str());
  } else {
    std::printf("%s", SqnrText(report, sqnr_options, sqnr.top).c_str());
  }
  return Ok();
}

// -m, -f, --protocol, --ctx, --chunks, the run settings and --json on `command`; the callback
// fills options->settings from the flags.
std::shared_ptr<SettingFlags> AddEvalFlags(CLI::App* command, const std::shared_ptr<EvalOptions>& options,
                                           const std::string& model_help, const std::string& protocol_help) {
  command->add_option("-m,--model", options->model, model_help)->required();
  command->add_option("-f,--file", options->text_file, "The text to score")->required();
  command->add_option("--protocol", options->protocol, protocol_help);
  command->add_option_function<int32_t>(
      "-c,--ctx,--ctx-size", [options](const int32_t& window) { options->window = window; },
      "Window length in tokens (default 512, or the model's trained context when shorter)");
  command->add_option_function<int64_t>(
      "--chunks", [options](const int64_t& chunks) { options->chunks = chunks; },
      "Score only the first N windows (0: all; default: all for kite, 32 for llama)");
  return std::make_shared<SettingFlags>(
      command, std::vector<std::string>{"backend", "chip", "threads", "check_tensors",
                                             "kv_type", "float_activations", "no_amx"});
}

}  // namespace

void AddEvalCommand(CLI::App& app, int* exit_code) {
  CLI::App* eval = app.add_subcommand("eval", "Measure a model");
  eval->require_subcommand(1);

  auto options = std::make_shared<EvalOptions>();
  options->protocol = "kite";
  CLI::App* ppl = eval->add_subcommand(
      "ppl",
      "Perplexity, ppl = exp(total NLL / scored tokens). --protocol kite: the text is tokenized "
      "once without BOS, cut into windows of --ctx tokens, each scored from [BOS] + window[:-1]. "
      "--protocol llama: llama.cpp perplexity's chunks of --ctx tokens, BOS first, the second "
      "half of each scored");
  auto settings = AddEvalFlags(ppl, options, "A Hugging Face model folder or a .gguf file",
                               "Scoring windows: kite (default) or llama");
  ppl->add_flag("--json", options->json,
                "Print {ppl, ppl_error, protocol, tokens, windows, nll, ctx, kv_type} as JSON");
  ppl->callback([options, settings, exit_code] {
    PrintWarnings(settings->ApplyTo(&options->settings));
    if (auto status = RunPerplexity(*options); !status) *exit_code = ReportError(status.error());
  });

  auto compare_options = std::make_shared<EvalOptions>();
  compare_options->protocol = "llama";
  auto compare = std::make_shared<CompareCliOptions>();
  CLI::App* compare_command = eval->add_subcommand(
      "compare",
      "A quantized model against its reference on the same windows: per token KL(P_ref || P_quant) "
      "over the whole vocabulary, top-1 agreement, Δp (probability of the correct token, quant - "
      "ref) and both NLLs, summarised as llama-perplexity --kl-divergence does");
  auto compare_settings = AddEvalFlags(compare_command, compare_options, "The quantized model",
                                       "Scoring windows: llama (default) or kite");
  compare_command->add_option("--ref", compare->reference,
                              "The reference (float) model; not needed when --ref-logits exists");
  compare_command->add_option(
      "--ref-logits", compare->ref_logits,
      "Cache of the reference's distributions: written when absent, read when present (checked "
      "against the text, windows and --ref model)");
  compare_command->add_option("--dump", compare->dump,
                              "Write the quantized model's logits of every scored position to this file "
                              "(for tools/compare_reference.py)");
  compare_command->add_flag("--json", compare_options->json, "Print the statistics as JSON");
  compare_command->callback([compare_options, compare, compare_settings, exit_code] {
    PrintWarnings(compare_settings->ApplyTo(&compare_options->settings));
    if (auto status = RunCompare(*compare_options, *compare); !status) *exit_code = ReportError(status.error());
  });

  auto sqnr_options = std::make_shared<EvalOptions>();
  auto sqnr = std::make_shared<SqnrCliOptions>();
  CLI::App* sqnr_command = eval->add_subcommand(
      "sqnr",
      "Which layer broke the model: the quantized and the reference model run the same windows side by "
      "side; for every linear output and quantized activation SQNR = 10 log10(Σref² / Σ(ref-quant)²), "
      "per tensor and per layer, worst first, offenders flagged. Each node computes from the "
      "reference's inputs unless --propagate");
  sqnr_command->add_option("-m,--model", sqnr_options->model, "The quantized model")->required();
  sqnr_command->add_option("--ref", sqnr->reference, "The reference (float) model")->required();
  sqnr_command->add_option("-f,--file", sqnr_options->text_file, "The text whose tokens both models run")->required();
  sqnr_command->add_option_function<int32_t>(
      "-c,--ctx,--ctx-size", [sqnr_options](const int32_t& window) { sqnr_options->window = window; },
      "Window length in tokens (default 128)");
  sqnr_command->add_option_function<int64_t>(
      "--chunks", [sqnr_options](const int64_t& chunks) { sqnr_options->chunks = chunks; },
      "Run the first N windows of the text (default 4; 0: all)");
  sqnr_command->add_flag("--propagate", sqnr->propagate,
                         "Let errors accumulate down the layers (each model computes from its own values)");
  sqnr_command->add_option("--flag-db", sqnr->flag_db, "Flag what is more than this many dB below the median (default 6)");
  sqnr_command->add_option("--top", sqnr->top, "Tensors listed in the text report (default 20; 0: all)");
  sqnr_command->add_option("--plot", sqnr->plot, "Write an SVG bar chart of per-layer SQNR to this file");
  sqnr_command->add_flag("--json", sqnr_options->json, "Print the report as JSON");
  auto sqnr_settings = std::make_shared<SettingFlags>(
      sqnr_command, std::vector<std::string>{"backend", "threads", "check_tensors", "kv_type"});
  sqnr_command->callback([sqnr_options, sqnr, sqnr_settings, exit_code] {
    PrintWarnings(sqnr_settings->ApplyTo(&sqnr_options->settings));
    if (auto status = RunSqnr(*sqnr_options, *sqnr); !status) *exit_code = ReportError(status.error());
  });
}

}  // namespace kite::cli
