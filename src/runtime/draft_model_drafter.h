// A draft model: a smaller model of the same tokenizer guesses the next tokens one decode step
// at a time (Genie's "spd" dialog, llama.cpp's --model-draft). It keeps its own Session, so its
// KV cache follows the target's history: before each draft it keeps the longest common prefix
// with the target's context (rolling back the tokens the target rejected) and feeds what is new
// (Follow: the prompt, a pause's tokens, a kept draft token; Propose: the target's own next
// token).
// Greedy generation drafts greedily; sampled generation draws each draft token from the draft
// model's distribution under the same sampler settings and records it (the q of the acceptance
// rule).
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "runtime/drafter.h"
#include "runtime/engine.h"
#include "runtime/sampler.h"
#include "runtime/session.h"

namespace kite {

// OK when `draft`'s tokenizer has the same tokens as `target`'s (same count, same text for every
// id); otherwise InvalidInput naming both models and the first id that differs.
Status CheckSameVocabulary(const Tokenizer& target, const std::string& target_name,
                           const Tokenizer& draft, const std::string& draft_name);

class DraftModelDrafter final : public Drafter {
 public:
  // `draft` (checked with CheckSameVocabulary by whoever loaded it) must outlive the drafter.
  explicit DraftModelDrafter(const Engine& draft);

  void Begin(const SamplerConfig& sampler) override;
  Result<int32_t> Follow(std::span<const int32_t> history) override;
  Result<const Draft*> Propose(std::span<const int32_t> context, int32_t max_tokens) override;
  std::string_view kind() const override { return "draft"; }

 private:
  const Engine& engine_;
  Session session_;
  std::optional<Sampler> sampler_;
  Draft draft_;
};

}  // namespace kite
