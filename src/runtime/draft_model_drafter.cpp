#include "runtime/draft_model_drafter.h"

#include <algorithm>

#include "runtime/logits_check.h"

namespace kite {

namespace {

// A seed of its own for the draft's draws: the same seed gives the same run, and the draft's
// draws are not the target's acceptance draws.
constexpr uint64_t kDraftSeedMix = 0x9e3779b97f4a7c15ull;

}  // namespace

Status CheckSameVocabulary(const Tokenizer& target, const std::string& target_name,
                           const Tokenizer& draft, const std::string& draft_name) {
  const std::string both = "the draft model " + draft_name + " and the model " + target_name;
  if (draft.vocab_size() != target.vocab_size()) {
    return InvalidInput(both + " have different vocabularies: " +
                        std::to_string(draft.vocab_size()) + " and " +
                        std::to_string(target.vocab_size()) +
                        " tokens; a draft model must use the same tokenizer");
  }
  for (int32_t id = 0; id < target.vocab_size(); ++id) {
    if (draft.TokenText(id) != target.TokenText(id)) {
      return InvalidInput(both + " have different vocabularies: token " + std::to_string(id) +
                          " is \"" + std::string(draft.TokenText(id)) + "\" in the draft and \"" +
                          std::string(target.TokenText(id)) +
                          "\" in the model; a draft model must use the same tokenizer");
    }
  }
  return Ok();
}

DraftModelDrafter::DraftModelDrafter(const Engine& draft) : engine_(draft), session_(draft) {}

void DraftModelDrafter::Begin(const SamplerConfig& sampler) {
  SamplerConfig config = sampler;
  config.seed ^= kDraftSeedMix;
  sampler_.emplace(config, engine_.tokenizer().vocab_size());
}

Result<int32_t> DraftModelDrafter::Follow(std::span<const int32_t> history) {
  // Past the draft's context there is no draft (Propose), so nothing to follow.
  if (std::ssize(history) >= engine_.context_length()) return 0;
  const int32_t kept = session_.ReusePrefix(history);
  if (kept < std::ssize(history)) KITE_TRY(session_.Feed(history.subspan(kept)));
  return static_cast<int32_t>(std::ssize(history) - kept);
}

Result<const Draft*> DraftModelDrafter::Propose(std::span<const int32_t> context,
                                                int32_t max_tokens) {
  draft_.Clear();
  const int32_t n_tokens = engine_.tokenizer().vocab_size();
  // The draft's context may be shorter than the target's: past it there is no draft.
  const int32_t room = engine_.context_length() - static_cast<int32_t>(context.size());
  max_tokens = std::min(max_tokens, room + 1);
  if (max_tokens < 1 || !sampler_) return &draft_;
  const int32_t kept = session_.ReusePrefix(context);
  std::span<const float> logits = KITE_TRY(session_.Feed(context.subspan(kept)));
  const bool greedy = sampler_->config().temperature <= 0.0f;
  for (int32_t i = 0; i < max_tokens; ++i) {
    const std::span<const float> candidates = logits.first(n_tokens);  // [n_tokens]
    KITE_RETURN_IF_ERROR(CheckLogitsFinite(candidates, session_.n_past()));
    const std::span<const TokenProb> q = sampler_->Distribution(candidates, session_.history());
    const int32_t token = greedy ? q.front().id : sampler_->Draw(q);
    draft_.tokens.push_back(token);
    if (!greedy) draft_.distributions.emplace_back(q.begin(), q.end());
    // The last token is fed next time, if the target keeps it.
    if (i + 1 < max_tokens) logits = KITE_TRY(session_.Feed(std::span(&token, 1)));
  }
  return &draft_;
}

}  // namespace kite
