#include "eval/perplexity.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "runtime/context_limit.h"
#include "runtime/session.h"

namespace kite {

namespace {

// -log softmax(logits)[target], computed in double with the max subtracted.
double NegativeLogLikelihood(std::span<const float> logits, int32_t target) {
  const float max_logit = *std::max_element(logits.begin(), logits.end());
  double sum = 0.0;
  for (float logit : logits) sum += std::exp(static_cast<double>(logit) - max_logit);
  return std::log(sum) + max_logit - logits[target];
}

}  // namespace

Result<PerplexityResult> ComputePerplexity(const Engine& engine, std::string_view text, int32_t window,
                                           const PerplexityProgress& progress) {
  if (window < 2) return InvalidInput("perplexity window must be at least 2 tokens, got " + std::to_string(window));
  if (Status fits = CheckContextRoom("the perplexity window", 0, window, engine.context_length());
      !fits) {
    Error error = std::move(fits.error());
    error.message += " (raise --ctx)";
    return std::unexpected(std::move(error));
  }
  const Tokenizer& tokenizer = engine.tokenizer();
  const std::vector<int32_t> ids = KITE_TRY(tokenizer.Encode(text, /*add_special=*/false));
  if (ids.size() < 2) return InvalidInput("text has " + std::to_string(ids.size()) + " tokens; perplexity needs at least 2");
  const int32_t bos = tokenizer.bos_id();
  // Rows of the logits: the embedding's, which may be padded past the tokenizer's ids. The
  // softmax runs over all of them, as PyTorch does (tools/reference_ppl.py).
  const int32_t vocab = engine.config().vocab;
  const int64_t total_windows = (static_cast<int64_t>(ids.size()) + window - 1) / window;

  PerplexityResult result;
  Session session(engine);
  std::vector<int32_t> input;  // [window]
  input.reserve(window);
  for (size_t start = 0; start < ids.size(); start += window) {
    const size_t end = std::min(ids.size(), start + window);
    const std::span<const int32_t> targets(ids.data() + start, end - start);
    input.clear();
    size_t first_target = 0;  // index into targets of the first scored token
    if (bos >= 0) {
      input.push_back(bos);
      input.insert(input.end(), targets.begin(), targets.end() - 1);
    } else {
      input.assign(targets.begin(), targets.end() - 1);
      first_target = 1;
    }
    if (input.empty()) continue;  // a last window of one token and no BOS: nothing to score
    session.Reset();
    const std::span<const float> logits = KITE_TRY(session.Feed(input, /*all_logits=*/true));
    // logits: [input.size(), vocab]; row r predicts targets[r + first_target].
    for (size_t r = 0; r < input.size(); ++r) {
      const size_t target = r + first_target;
      const double nll = NegativeLogLikelihood(logits.subspan(r * vocab, vocab), targets[target]);
      // Any NaN or Inf in the row makes the softmax's sum, and so the NLL, non-finite: checking
      // it costs nothing and stops before the total becomes `perplexity nan`.
      if (!std::isfinite(nll)) {
        return InvalidInput("the logits predicting token " + std::to_string(start + target) +
                            " of the text (window " + std::to_string(result.windows + 1) +
                            ", position " + std::to_string(r) + ") are not finite (NLL " +
                            std::to_string(nll) +
                            "); the weights may hold NaN or Inf: run with --check-tensors to "
                            "find them");
      }
      result.nll += nll;
      ++result.tokens;
    }
    ++result.windows;
    result.ppl = std::exp(result.nll / result.tokens);
    if (progress) progress(result.windows, total_windows, result.ppl);
  }
  return result;
}

}  // namespace kite
