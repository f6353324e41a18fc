// Perplexity of a model on a text, scored in the windows of eval/scoring_plan.h (Kite's
// protocol, or llama.cpp perplexity's), written down exactly so a PyTorch reference
// (tools/reference_ppl.py) reproduces it: ppl = exp(total NLL / scored tokens), natural log,
// with the softmax over every row of the logits (the embedding's, which may be padded past the
// tokenizer's ids, as PyTorch does).
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>

#include "base/status.h"
#include "eval/scoring_plan.h"
#include "runtime/engine.h"

namespace kite {

struct PerplexityResult {
  double ppl = 0.0;
  double ppl_error = 0.0;  // standard error of ppl, llama.cpp's "PPL = x +/- e": ppl * SE(NLL)
  double nll = 0.0;        // total negative log-likelihood, nats
  int64_t tokens = 0;      // targets scored
  int64_t windows = 0;
};

// Called after each window with (windows done, windows in all, running ppl).
using PerplexityProgress = std::function<void(int64_t, int64_t, double)>;

Result<PerplexityResult> ComputePerplexity(const Engine& engine, std::string_view text,
                                           const ScoringOptions& options,
                                           const PerplexityProgress& progress = nullptr);

// -log softmax(logits)[target], in double with the max subtracted.
double NegativeLogLikelihood(std::span<const float> logits, int32_t target);

// Checks that a window fits the engine's context (the message says to raise --ctx).
Status CheckWindowFits(const Engine& engine, int32_t window);

}  // namespace kite
