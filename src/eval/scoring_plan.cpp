#include "eval/scoring_plan.h"

#include <algorithm>
#include <string>

namespace kite {

Result<ScoringProtocol> ParseScoringProtocol(std::string_view name) {
  if (name == "kite") return ScoringProtocol::kKite;
  if (name == "llama") return ScoringProtocol::kLlama;
  return InvalidInput("--protocol " + std::string(name) + ": must be one of kite, llama");
}

std::string_view ScoringProtocolName(ScoringProtocol protocol) {
  return protocol == ScoringProtocol::kLlama ? "llama" : "kite";
}

int64_t ScoringPlan::scored_tokens() const {
  int64_t total = 0;
  for (const ScoringWindow& window : windows) total += static_cast<int64_t>(window.targets.size());
  return total;
}

namespace {

ScoringPlan PlanKite(std::vector<int32_t> ids, int32_t bos, const ScoringOptions& options) {
  const size_t window = static_cast<size_t>(options.ctx);
  ScoringPlan plan;
  plan.text_tokens = static_cast<int64_t>(ids.size());
  plan.available_windows = static_cast<int64_t>((ids.size() + window - 1) / window);
  for (size_t start = 0; start < ids.size(); start += window) {
    if (options.max_windows > 0 && static_cast<int64_t>(plan.windows.size()) == options.max_windows) break;
    const size_t end = std::min(ids.size(), start + window);
    ScoringWindow scored;
    if (bos >= 0) {
      scored.input.push_back(bos);
      scored.input.insert(scored.input.end(), ids.begin() + start, ids.begin() + end - 1);
      scored.targets.assign(ids.begin() + start, ids.begin() + end);
      scored.first_target = static_cast<int64_t>(start);
    } else {
      // A last window of one token and no BOS has nothing to score.
      if (end - start < 2) continue;
      scored.input.assign(ids.begin() + start, ids.begin() + end - 1);
      scored.targets.assign(ids.begin() + start + 1, ids.begin() + end);
      scored.first_target = static_cast<int64_t>(start + 1);
    }
    plan.windows.push_back(std::move(scored));
  }
  return plan;
}

Result<ScoringPlan> PlanLlama(std::vector<int32_t> ids, int32_t bos, bool add_bos,
                              const ScoringOptions& options) {
  const int32_t n_ctx = options.ctx;
  if (add_bos && bos >= 0) ids.insert(ids.begin(), bos);
  if (static_cast<int64_t>(ids.size()) < 2 * static_cast<int64_t>(n_ctx)) {
    return InvalidInput("the llama protocol needs at least " + std::to_string(2 * n_ctx) +
                        " tokens (two chunks of --ctx " + std::to_string(n_ctx) +
                        ") and the text has " + std::to_string(ids.size()) +
                        ": give a longer text or a smaller --ctx");
  }
  ScoringPlan plan;
  plan.text_tokens = static_cast<int64_t>(ids.size());
  plan.available_windows = plan.text_tokens / n_ctx;
  const int64_t chunks = options.max_windows > 0 ? std::min(options.max_windows, plan.available_windows)
                                                 : plan.available_windows;
  const int32_t first = n_ctx / 2;
  for (int64_t i = 0; i < chunks; ++i) {
    const auto start = ids.begin() + i * n_ctx;
    ScoringWindow scored;
    scored.input.assign(start, start + n_ctx);
    if (add_bos && bos >= 0) scored.input[0] = bos;
    scored.first_row = first;
    scored.targets.assign(start + first + 1, start + n_ctx);
    scored.first_target = i * n_ctx + first + 1;
    plan.windows.push_back(std::move(scored));
  }
  return plan;
}

}  // namespace

Result<ScoringPlan> PlanScoring(const Tokenizer& tokenizer, std::string_view text,
                                const ScoringOptions& options) {
  const int32_t least = options.protocol == ScoringProtocol::kLlama ? 4 : 2;
  if (options.ctx < least) {
    return InvalidInput("--ctx " + std::to_string(options.ctx) + ": the " +
                        std::string(ScoringProtocolName(options.protocol)) +
                        " protocol needs windows of at least " + std::to_string(least) + " tokens");
  }
  if (options.max_windows < 0) {
    return InvalidInput("--chunks " + std::to_string(options.max_windows) + ": must be >= 0 (0: all)");
  }
  std::vector<int32_t> ids = KITE_TRY(tokenizer.Encode(text, /*add_special=*/false));
  if (options.protocol == ScoringProtocol::kLlama) {
    return PlanLlama(std::move(ids), tokenizer.bos_id(), tokenizer.Summary().add_bos, options);
  }
  if (ids.size() < 2) {
    return InvalidInput("text has " + std::to_string(ids.size()) + " tokens; perplexity needs at least 2");
  }
  return PlanKite(std::move(ids), tokenizer.bos_id(), options);
}

}  // namespace kite
