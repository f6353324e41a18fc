// rope.fit: which RoPE base do the weights fit? A base off by 10x either way looks plausible in a
// config (published bases run from 10^4 to 10^7; rope.config catches only gross errors), but the
// weights were trained with one: scored under another, the model predicts text worse. So the
// text's tokens are scored under the declared base and under 10x smaller and 10x larger, and a
// base that predicts clearly better than the declared one fails the check:
//   mean per-token NLL gain > 0.05 nats and > 3 standard errors of the paired differences.
// On the demo model (trained with 10^4) and its held-out text, 10^3 costs 0.34 nats per token
// and 10^5 0.12, so either error is caught with a wide margin (tests/doctor_cli_test.cpp).
// The signal needs text like the model's training data: a model that predicts the text poorly
// (NLL above 60% of a uniform guess's, e.g. random weights, or a model trained on other text
// than the built-in English prose) leaves the check inconclusive (warn, give --text FILE).
#include <cmath>
#include <string>
#include <vector>

#include "eval/doctor/checks.h"
#include "eval/doctor/format.h"
#include "eval/perplexity.h"
#include "eval/scoring_plan.h"
#include "models/architectures.h"
#include "runtime/model_files.h"
#include "runtime/session.h"

namespace kite::doctor {

namespace {

constexpr char kId[] = "rope.fit";
constexpr int64_t kScoredTokens = 1024;  // at most: the first windows of the text
constexpr double kMinGain = 0.05;        // nats per token
constexpr double kMinStandardErrors = 3.0;
constexpr double kInconclusiveShare = 0.6;  // of ln(vocab)

// The model at `path` with its RoPE base replaced: the same weights (views into the loaded
// model, which the new one keeps), another config.
Result<std::unique_ptr<Engine>> EngineWithRopeBase(const std::string& path, float theta, const EngineOptions& options) {
  ModelFiles files = KITE_TRY(LoadModelFiles(path));
  std::shared_ptr<const Model> original(std::move(files.model));
  ModelConfig config = original->config();
  config.rope.theta = theta;
  const Architecture* architecture = KITE_TRY(FindArchitecture(config));
  WeightStore store;
  std::map<std::string, QuantEncoding, std::less<>> encodings;
  for (const auto& [name, view] : original->weights().weights()) {
    store.Add(view);
    if (const QuantEncoding* encoding = original->WeightEncoding(name)) encodings.emplace(name, *encoding);
  }
  store.Keep(original);
  std::unique_ptr<Model> model = architecture->create(
      std::move(config), std::move(store), [original](const std::string& name) { return original->FileName(name); });
  model->SetWeightEncodings(std::move(encodings));
  return Engine::Create(KITE_TRY(PairModelFiles(std::move(model), std::move(files.tokenizer))), options);
}

// -log p(target) of every scored token of `plan`.
Result<std::vector<double>> ScoreTokens(const Engine& engine, const ScoringPlan& plan) {
  std::vector<double> nll;
  Session session(engine);
  const int32_t vocab = engine.config().vocab;
  for (const ScoringWindow& window : plan.windows) {
    session.Reset();
    const std::span<const float> logits = KITE_TRY(session.Feed(window.input, /*all_logits=*/true));
    for (size_t t = 0; t < window.targets.size(); ++t) {
      nll.push_back(NegativeLogLikelihood(logits.subspan((window.first_row + t) * vocab, vocab), window.targets[t]));
    }
  }
  return nll;
}

double Mean(const std::vector<double>& values) {
  double sum = 0.0;
  for (double value : values) sum += value;
  return values.empty() ? 0.0 : sum / static_cast<double>(values.size());
}

struct Gain {
  double mean = 0.0;            // nats per token the other base saves
  double standard_error = 0.0;  // of the mean of the paired differences
};

Gain PairedGain(const std::vector<double>& declared, const std::vector<double>& other) {
  std::vector<double> gain(declared.size());
  for (size_t i = 0; i < declared.size(); ++i) gain[i] = declared[i] - other[i];
  const double mean = Mean(gain);
  double variance = 0.0;
  for (double value : gain) variance += (value - mean) * (value - mean);
  const double n = static_cast<double>(gain.size());
  return {mean, n > 1 ? std::sqrt(variance / (n - 1) / n) : INFINITY};
}

}  // namespace

CheckResult CheckRopeFit(const Engine& engine, const std::string& path, std::string_view text) {
  const int32_t window = engine.context_length();
  const ScoringOptions scoring{.protocol = ScoringProtocol::kKite, .ctx = window,
                               .max_windows = (kScoredTokens + window - 1) / window};
  auto plan = PlanScoring(engine.tokenizer(), text, scoring);
  if (!plan || plan->scored_tokens() < 16) {
    return Finding(kId, CheckStatus::kWarn, "the text is too short to score" + (plan ? std::string() : ": " + plan.error().message),
                   "give --text FILE with a page or more of text like the model's training data");
  }
  auto declared = ScoreTokens(engine, *plan);
  if (!declared) return Finding(kId, CheckStatus::kFail, "scoring fails: " + declared.error().message, "see the message");
  const float theta = engine.config().rope.theta;
  const double uniform = std::log(static_cast<double>(engine.tokenizer().vocab_size()));
  const double declared_nll = Mean(*declared);
  nlohmann::ordered_json data = {{"tokens", declared->size()},
                                 {"uniform_nll", uniform},
                                 {"bases", nlohmann::ordered_json::array({{{"base", theta}, {"nll", declared_nll}}})}};
  auto finish = [&](CheckStatus status, std::string summary, std::string fix = "") {
    CheckResult result = Finding(kId, status, std::move(summary), std::move(fix));
    result.data = std::move(data);
    return result;
  };
  const std::string scored = std::to_string(declared->size()) + " tokens";
  if (declared_nll > kInconclusiveShare * uniform) {
    return finish(CheckStatus::kWarn,
                  "inconclusive: the model predicts the text poorly (" + Fixed(declared_nll, 2) + " nats per token; a uniform guess " +
                      Fixed(uniform, 2) + "), so its fit to the RoPE base cannot be judged",
                  "if the weights are trained, either the tokenizer is not the model's own (see the tokenizer checks) or "
                  "the text is unlike its training data: give --text FILE with text like it");
  }
  float best_theta = theta;
  Gain best;
  std::string others;
  for (const float factor : {0.1f, 10.0f}) {
    auto variant = EngineWithRopeBase(path, theta * factor, engine.options());
    if (!variant) return finish(CheckStatus::kWarn, "the model with another base does not load: " + variant.error().message);
    auto nll = ScoreTokens(**variant, *plan);
    if (!nll) return finish(CheckStatus::kWarn, "scoring with another base fails: " + nll.error().message);
    const Gain gain = PairedGain(*declared, *nll);
    data["bases"].push_back({{"base", theta * factor}, {"nll", Mean(*nll)}, {"gain", gain.mean}, {"standard_error", gain.standard_error}});
    others += (others.empty() ? "" : ", ") + Fixed(theta * factor, 0) + ": " + Fixed(Mean(*nll), 3);
    if (gain.mean > best.mean) {
      best = gain;
      best_theta = theta * factor;
    }
  }
  const std::string figures = "NLL per token over " + scored + ": declared base " + Fixed(theta, 0) + ": " +
                              Fixed(declared_nll, 3) + ", " + others;
  if (best.mean > kMinGain && best.mean > kMinStandardErrors * best.standard_error) {
    const bool larger = best_theta > theta;
    return finish(CheckStatus::kFail,
                  figures + ": the weights fit base " + Fixed(best_theta, 0) + " better by " + Fixed(best.mean, 3) +
                      " +/- " + Fixed(best.standard_error, 3) + " nats per token; the declared base is 10x too " +
                      (larger ? "small" : "large"),
                  "set rope_theta (config.json) / rope.freq_base (GGUF) to the value the model was trained with, "
                  "likely " + Fixed(best_theta, 0));
  }
  return finish(CheckStatus::kPass, figures + ": the declared base fits the weights best");
}

}  // namespace kite::doctor
