// Drafters for speculative decoding (runtime/speculator.h): something cheap that guesses the
// next few tokens, which the target model then checks all at once in one batched pass. Two
// kinds, one file each: prompt lookup, which copies what followed an earlier occurrence of the
// last few tokens (ngram_drafter.h, no second model), and a smaller model of the same tokenizer
// (draft_model_drafter.h, Genie's "spd" dialog, llama.cpp's --model-draft).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "runtime/sampler.h"

namespace kite {

struct Draft {
  std::vector<int32_t> tokens;  // the guessed continuation, in order
  // Per token, the distribution it was drawn from (the q of the acceptance rule,
  // runtime/speculative_accept.h); empty when every token was certain (a point mass), as an
  // n-gram copy or a greedy draft model's are.
  std::vector<std::vector<TokenProb>> distributions;

  void Clear() {
    tokens.clear();
    distributions.clear();
  }
};

class Drafter {
 public:
  virtual ~Drafter() = default;

  // Called as a generation starts: a drafter that samples draws as `sampler` says (its own
  // generator, seeded from it); others ignore it.
  virtual void Begin(const SamplerConfig& sampler) = 0;

  // Brings the drafter up to `history`, the tokens the target has fed, before a draft is
  // asked for: a draft model feeds what its cache lacks (the prompt at the first draft, the
  // tokens of a pause, a kept draft token), so that Propose feeds only the token the target is
  // about to feed. The speculator calls it before it starts timing a pass: draft_length.h
  // prices a pass by its length, and this part depends on how long ago the last draft was.
  // Returns the tokens it fed (draft_length.h prices the catching up of the next pause by them).
  virtual Result<int32_t> Follow(std::span<const int32_t> /*history*/) { return 0; }

  // Up to `max_tokens` (>= 1) tokens to follow `context`: the target's history and the token
  // it is about to feed. Fewer, or none, when the drafter has no good guess. The draft stays
  // valid until the next call.
  virtual Result<const Draft*> Propose(std::span<const int32_t> context, int32_t max_tokens) = 0;

  // "ngram" or "draft", as --spec names the kind.
  virtual std::string_view kind() const = 0;
};

}  // namespace kite
