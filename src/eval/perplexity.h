// Perplexity of a model on a text, with the windowing llama.cpp users know from `perplexity`
// but written down exactly so a PyTorch reference (tools/reference_ppl.py) can reproduce it:
// the text is tokenized once without BOS and cut into consecutive windows of N tokens (the last
// may be shorter); each window is scored with input [BOS] + window[:-1] against targets window;
// ppl = exp(total NLL / total tokens), natural log. A model without a BOS token scores
// window[1:] from window[:-1] instead (one target fewer per window).
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>

#include "base/status.h"
#include "runtime/engine.h"

namespace kite {

struct PerplexityResult {
  double ppl = 0.0;
  double nll = 0.0;      // total negative log-likelihood, nats
  int64_t tokens = 0;    // targets scored
  int64_t windows = 0;
};

// Called after each window with (windows done, windows in all, running ppl).
using PerplexityProgress = std::function<void(int64_t, int64_t, double)>;

Result<PerplexityResult> ComputePerplexity(const Engine& engine, std::string_view text, int32_t window,
                                           const PerplexityProgress& progress = nullptr);

}  // namespace kite
