// Prompt lookup (n-gram) drafting: the last n tokens of the context are looked up earlier in the
// context, and what followed their most recent earlier occurrence (with enough tokens after it)
// is proposed as the continuation. No second model: it pays off where the output repeats its input (quoting or
// summarising a given passage, editing code, a structured answer), and costs a scan of the
// context otherwise. n runs from ngram_max down to ngram_min: a longer match is stronger
// evidence, so it wins. Genie's "lade" (lookahead) dialog and llama.cpp's prompt-lookup and
// n-gram modes are the same idea.
#pragma once

#include <cstdint>

#include "runtime/drafter.h"

namespace kite {

class NgramDrafter final : public Drafter {
 public:
  // 1 <= ngram_min <= ngram_max.
  NgramDrafter(int32_t ngram_min, int32_t ngram_max);

  void Begin(const SamplerConfig&) override {}
  Result<const Draft*> Propose(std::span<const int32_t> context, int32_t max_tokens) override;
  std::string_view kind() const override { return "ngram"; }

 private:
  int32_t ngram_min_;
  int32_t ngram_max_;
  Draft draft_;
};

}  // namespace kite
