// reference.kl: how far a quantized model's next-token distributions are from its float
// model's, on the first windows of the text: mean KL(P_ref || P_model) over every scored token,
// and how often both pick the same top token. `kite eval compare` does the same on a whole text
// with llama.cpp's statistics; this is its quick version (the same row encoding and comparison,
// eval/reference_logits.h, with the reference's rows kept in memory: about 1 KiB per token per
// 512 vocabulary entries). Typical means: q8_0 below 0.01, q4 types a few hundredths, 2-bit
// types a few tenths; past 0.5 nats the model is not the reference's any more.
#include <cmath>
#include <string>
#include <vector>

#include "eval/compare_stats.h"
#include "eval/doctor/checks.h"
#include "eval/doctor/format.h"
#include "eval/reference_logits.h"
#include "eval/scoring_plan.h"
#include "runtime/session.h"
#include "tensor/dtype.h"

namespace kite::doctor {

namespace {

constexpr char kId[] = "reference.kl";
constexpr int64_t kScoredTokens = 512;
constexpr double kWarnKld = 0.1;  // nats
constexpr double kFailKld = 0.5;

bool IsQuantized(const Model& model) {
  for (const auto& [name, view] : model.weights().weights()) {
    if (view.dtype != DType::kF32 && view.dtype != DType::kF16 && view.dtype != DType::kBF16) return true;
  }
  return false;
}

// The reference's encoded rows of every scored token of `plan`.
Result<std::vector<uint8_t>> ReferenceRows(const Engine& reference, const ScoringPlan& plan) {
  const int32_t vocab = reference.config().vocab;
  const size_t row_bytes = ReferenceRowBytes(vocab);
  std::vector<uint8_t> rows(static_cast<size_t>(plan.scored_tokens()) * row_bytes);
  Session session(reference);
  size_t row = 0;
  for (const ScoringWindow& window : plan.windows) {
    session.Reset();
    const std::span<const float> logits = KITE_TRY(session.Feed(window.input, /*all_logits=*/true));
    for (size_t t = 0; t < window.targets.size(); ++t, ++row) {
      EncodeReferenceRow(logits.subspan((window.first_row + t) * vocab, vocab), window.targets[t],
                         std::span<uint8_t>(rows.data() + row * row_bytes, row_bytes));
    }
  }
  return rows;
}

}  // namespace

CheckResult CheckReferenceKl(const Engine& engine, const std::string& reference_path, std::string_view text) {
  const bool quantized = IsQuantized(engine.model());
  auto reference = Engine::Load(reference_path, engine.options());
  if (!reference) {
    return Finding(kId, CheckStatus::kFail, "the reference does not load: " + reference.error().message,
                   "give --reference the float model this one was quantized from");
  }
  const int32_t vocab = engine.config().vocab;
  if ((*reference)->config().vocab != vocab) {
    return Finding(kId, CheckStatus::kFail,
                   "the reference has " + std::to_string((*reference)->config().vocab) + " vocabulary rows, this model " +
                       std::to_string(vocab) + ": it is another model",
                   "give --reference the float model this one was quantized from");
  }
  const int32_t window = engine.context_length();
  const ScoringOptions scoring{.protocol = ScoringProtocol::kKite, .ctx = window,
                               .max_windows = (kScoredTokens + window - 1) / window};
  auto plan = PlanScoring(engine.tokenizer(), text, scoring);
  auto reference_plan = PlanScoring((*reference)->tokenizer(), text, scoring);
  if (!plan || !reference_plan) {
    return Finding(kId, CheckStatus::kFail, "the text does not tokenize: " + (plan ? reference_plan : plan).error().message,
                   "give --text FILE with plain UTF-8 text");
  }
  for (size_t w = 0; w < plan->windows.size(); ++w) {
    if (w >= reference_plan->windows.size() || plan->windows[w].input != reference_plan->windows[w].input) {
      return Finding(kId, CheckStatus::kFail, "the reference's tokenizer splits the text differently: it is another model's",
                     "give --reference the float model this one was quantized from");
    }
  }
  auto rows = ReferenceRows(**reference, *plan);
  reference->reset();  // one model in memory at a time beside this one
  if (!rows) return Finding(kId, CheckStatus::kFail, "the reference does not run: " + rows.error().message, "see the message");

  std::vector<TokenComparison> tokens;
  const size_t row_bytes = ReferenceRowBytes(vocab);
  Session session(engine);
  for (const ScoringWindow& scored : plan->windows) {
    session.Reset();
    auto logits = session.Feed(scored.input, /*all_logits=*/true);
    if (!logits) return Finding(kId, CheckStatus::kFail, "the model does not run: " + logits.error().message, "see the message");
    for (size_t t = 0; t < scored.targets.size(); ++t) {
      const size_t row = tokens.size();
      tokens.push_back(CompareToReference(logits->subspan((scored.first_row + t) * vocab, vocab), scored.targets[t],
                                          std::span<const uint8_t>(rows->data() + row * row_bytes, row_bytes)));
    }
  }
  const CompareStats stats = Summarize(tokens);
  const std::string figures = "mean KL(reference || model) " + Significant(stats.kld.value) + " +/- " +
                              Significant(stats.kld.error) + " nats over " + std::to_string(stats.tokens) +
                              " tokens, same top token " + Fixed(100 * stats.same_top.value, 1) + "%, PPL ratio " +
                              Fixed(stats.ppl_ratio.value, 3) + (quantized ? "" : " (this model is not quantized)");
  CheckResult result;
  const std::string fix = "use a type with more bits (q8_0, q6_k, q5_k_m), an importance matrix (kite quantize "
                          "--imatrix), or check that --reference is the float model this one was made from";
  if (!std::isfinite(stats.kld.value) || stats.kld.value > kFailKld) {
    result = Finding(kId, CheckStatus::kFail, figures + ": the model is far from its reference", fix);
  } else if (stats.kld.value > kWarnKld) {
    result = Finding(kId, CheckStatus::kWarn, figures + ": a noticeable loss", fix);
  } else {
    result = Finding(kId, CheckStatus::kPass, figures);
  }
  result.data = {{"quantized", quantized},     {"tokens", stats.tokens},
                 {"kld", stats.kld.value},     {"kld_error", stats.kld.error},
                 {"same_top", stats.same_top.value}, {"ppl_ratio", stats.ppl_ratio.value}};
  return result;
}

}  // namespace kite::doctor
