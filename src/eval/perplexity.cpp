#include "eval/perplexity.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "runtime/context_limit.h"
#include "runtime/session.h"

namespace kite {

double NegativeLogLikelihood(std::span<const float> logits, int32_t target) {
  const float max_logit = *std::max_element(logits.begin(), logits.end());
  double sum = 0.0;
  for (float logit : logits) sum += std::exp(static_cast<double>(logit) - max_logit);
  return std::log(sum) + max_logit - logits[target];
}

Status CheckWindowFits(const Engine& engine, int32_t window) {
  if (Status fits = CheckContextRoom("the perplexity window", 0, window, engine.context_length());
      !fits) {
    Error error = std::move(fits.error());
    error.message += " (raise --ctx)";
    return std::unexpected(std::move(error));
  }
  return Ok();
}

Result<PerplexityResult> ComputePerplexity(const Engine& engine, std::string_view text,
                                           const ScoringOptions& options,
                                           const PerplexityProgress& progress) {
  const ScoringPlan plan = KITE_TRY(PlanScoring(engine.tokenizer(), text, options));
  KITE_RETURN_IF_ERROR(CheckWindowFits(engine, options.ctx));
  const int32_t vocab = engine.config().vocab;
  const auto total_windows = static_cast<int64_t>(plan.windows.size());

  PerplexityResult result;
  double nll_squares = 0.0;  // for the standard error
  Session session(engine);
  for (const ScoringWindow& window : plan.windows) {
    session.Reset();
    const std::span<const float> logits = KITE_TRY(session.Feed(window.input, /*all_logits=*/true));
    // logits: [input.size(), vocab]; row first_row + t predicts targets[t].
    for (size_t t = 0; t < window.targets.size(); ++t) {
      const size_t row = window.first_row + t;
      const double nll = NegativeLogLikelihood(logits.subspan(row * vocab, vocab), window.targets[t]);
      // Any NaN or Inf in the row makes the softmax's sum, and so the NLL, non-finite: checking
      // it costs nothing and stops before the total becomes `perplexity nan`.
      if (!std::isfinite(nll)) {
        return InvalidInput("the logits predicting token " + std::to_string(window.first_target + t) +
                            " of the text (window " + std::to_string(result.windows + 1) +
                            ", position " + std::to_string(row) + ") are not finite (NLL " +
                            std::to_string(nll) +
                            "); the weights may hold NaN or Inf: run with --check-tensors to "
                            "find them");
      }
      result.nll += nll;
      nll_squares += nll * nll;
      ++result.tokens;
    }
    ++result.windows;
    result.ppl = std::exp(result.nll / result.tokens);
    if (progress) progress(result.windows, total_windows, result.ppl);
  }
  if (result.tokens > 1) {
    // llama.cpp's estimate: the standard error of the mean NLL, carried through exp().
    const double mean = result.nll / result.tokens;
    const double variance = nll_squares / result.tokens - mean * mean;
    if (variance > 0) result.ppl_error = result.ppl * std::sqrt(variance / (result.tokens - 1));
  }
  return result;
}

}  // namespace kite
