#include "cli/bench_speculative.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "base/mapped_file.h"
#include "base/seconds_since.h"
#include "runtime/prompt.h"
#include "runtime/session.h"
#include "runtime/speculative_setup.h"

namespace kite::cli {

namespace {

// Without -f: an extractive task, a passage and the start of it again, which a model that has
// learned to copy continues word for word (what prompt lookup pays off on).
constexpr const char* kDefaultPrompt =
    "It is a truth universally acknowledged, that a single man in possession of a good fortune, "
    "must be in want of a wife. However little known the feelings or views of such a man may be "
    "on his first entering a neighbourhood, this truth is so well fixed in the minds of the "
    "surrounding families, that he is considered the rightful property of some one or other of "
    "their daughters.\n%\nIt is a truth universally acknowledged, that";

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

// Tokens after the first over the wall time after the prompt: sampling, drafting and the
// rollbacks count, in both modes alike (Generate's decode_seconds times the runs only).
struct Timed {
  Session::GenerateResult result;
  double rate = 0.0;
};

}  // namespace

SpeculativeBenchFlags::SpeculativeBenchFlags(CLI::App* bench)
    : settings_(bench, {"speculative.mode", "speculative.draft_model", "speculative.draft_max",
                        "speculative.draft_min", "speculative.ngram_min", "speculative.ngram_max"}) {
  bench->add_option("-f,--file", prompt_file_,
                    "With --spec: the prompt, a text file (default: a passage and its start "
                    "again, to be copied)");
}

bool SpeculativeBenchFlags::given() const {
  return settings_.Given("speculative.mode") || settings_.Given("speculative.draft_model");
}

Status SpeculativeBenchFlags::Run(const SpeculativeBenchRun& run) const {
  if (run.n_gen < 1) return InvalidInput("--spec compares generation: give -n N > 0");
  RunSettings settings;
  settings.model = run.model;
  settings.engine.threads = run.threads;
  settings.engine.backend = run.backend;
  settings.engine.kv_dtype = run.kv_type;
  settings.engine.amx = run.amx;
  settings.engine.context_length = run.ctx;
  (void)settings_.ApplyTo(&settings);  // warnings were printed by the table's parse
  if (settings.speculative.mode == "none" && settings.speculative.draft_model.empty()) {
    return InvalidInput("--spec none: nothing to compare; give --spec ngram or --spec draft");
  }
  const std::string prompt =
      prompt_file_.empty() ? kDefaultPrompt : KITE_TRY(ReadTextFile(prompt_file_, kTextFileLimit));
  auto engine = KITE_TRY(Engine::Load(settings.model, settings.engine));
  const std::vector<int32_t> prompt_ids = KITE_TRY(RawPromptIds(engine->tokenizer(), prompt));
  const auto setup = KITE_TRY(SpeculativeSetup::Create(settings, *engine));
  const std::unique_ptr<Drafter> drafter = KITE_TRY(setup->NewDrafter());

  Session::GenerateOptions plain;
  plain.max_tokens = run.n_gen;
  plain.ignore_eos = true;  // every run generates n tokens, as llama-bench's tg does
  plain.sampler.temperature = 0.0f;
  Session::GenerateOptions speculative = plain;
  speculative.drafter = drafter.get();
  speculative.draft_limits = setup->limits();

  Session session(*engine);
  auto generate = [&](const Session::GenerateOptions& options) -> Result<Timed> {
    session.Reset();
    const auto start = std::chrono::steady_clock::now();
    Timed timed{.result = KITE_TRY(session.Generate(prompt_ids, options))};
    const double seconds = SecondsSince(start) - timed.result.prefill_seconds;
    if (seconds > 0) timed.rate = (std::ssize(timed.result.ids) - 1) / seconds;
    return timed;
  };
  const Session::GenerateResult plain_warmup = KITE_TRY(generate(plain)).result;
  (void)KITE_TRY(generate(speculative));
  std::vector<double> plain_rates, speculative_rates;
  Session::GenerateResult last;
  bool identical = true;
  for (int32_t rep = 0; rep < run.reps; ++rep) {
    for (int order = 0; order < 2; ++order) {
      if ((order == 0) == (rep % 2 == 0)) {
        plain_rates.push_back(KITE_TRY(generate(plain)).rate);
      } else {
        const Timed timed = KITE_TRY(generate(speculative));
        last = timed.result;
        speculative_rates.push_back(timed.rate);
        identical = identical && last.ids == plain_warmup.ids;
      }
    }
  }
  const double plain_ts = Median(plain_rates), speculative_ts = Median(speculative_rates);
  const double ratio = plain_ts > 0 ? speculative_ts / plain_ts : 0.0;
  const SpeculativeStats& stats = last.speculative;
  if (run.json) {
    const nlohmann::ordered_json out = {
        {"model", run.model},
        {"mode", setup->mode()},
        {"draft_model", settings.speculative.draft_model},
        {"draft_max", setup->limits().draft_max},
        {"prompt_tokens", prompt_ids.size()},
        {"n_gen", run.n_gen},
        {"reps", run.reps},
        {"plain_ts", plain_ts},
        {"speculative_ts", speculative_ts},
        {"speedup", ratio},
        {"acceptance_rate", stats.AcceptanceRate()},
        {"tokens_per_pass", stats.TokensPerRun()},
        {"passes", stats.passes},
        {"plain_steps", stats.plain_steps},
        {"identical_output", identical}};
    std::printf("%s\n", out.dump(2).c_str());
  } else {
    std::printf("| model | spec | prompt | tg | plain t/s | spec t/s | speed-up | accepted | tokens/pass | same output |\n");
    std::printf("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n");
    std::printf("| %s | %s | %zu | %d | %.2f | %.2f | %.2fx | %.0f%% | %.2f | %s |\n",
                run.model.c_str(), setup->mode().c_str(), prompt_ids.size(), run.n_gen, plain_ts,
                speculative_ts, ratio, 100.0 * stats.AcceptanceRate(), stats.TokensPerRun(),
                identical ? "yes" : "NO");
    std::printf("\nmedian of %d alternating repetitions after a warm-up of each; greedy, %d "
                "tokens from the prompt\n",
                run.reps, run.n_gen);
  }
  if (!identical) {
    return Internal("speculative greedy output differs from plain greedy output: please report");
  }
  return Ok();
}

}  // namespace kite::cli
