// The statistics `llama-perplexity --kl-divergence` prints (tools/perplexity/perplexity.cpp,
// kl_divergence()), from per-token comparisons, so Kite's figures compare with llama.cpp's.
// Standard errors are those of a mean over tokens, sqrt(var / (n - 1)) with var the population
// variance; the ratio and difference of perplexities take theirs from the paired per-token
// differences of NLL (which is what llama.cpp's covariance term amounts to).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "eval/reference_logits.h"

namespace kite {

struct Estimate {
  double value = 0.0;
  double error = 0.0;  // standard error
};

struct Quantile {
  double fraction = 0.0;  // 1: maximum, 0.5: median, 0: minimum
  double value = 0.0;
};

struct CompareStats {
  int64_t tokens = 0;
  Estimate ppl;                // PPL(Q)
  Estimate ppl_ref;            // PPL(base)
  double ln_ppl_correlation = 0.0;  // Cor(ln PPL(Q), ln PPL(base))
  Estimate ln_ppl_ratio;       // mean of nll - nll_ref
  Estimate ppl_ratio;          // PPL(Q) / PPL(base)
  Estimate ppl_diff;           // PPL(Q) - PPL(base)
  Estimate kld;                // mean KL(P_ref || P_quant)
  std::vector<Quantile> kld_quantiles;     // max, 99.9%, 99%, 95%, 90%, median, 10%, 5%, 1%, 0.1%, min
  Estimate p_diff;             // mean Δp = q(target) - p(target)
  std::vector<Quantile> p_diff_quantiles;  // max, 99.9, 99, 95, 90, 75, median, 25, 10, 5, 1, 0.1, min
  Estimate p_diff_rms;         // sqrt(mean Δp²)
  Estimate same_top;           // fraction of tokens whose top-1 token agrees
};

// InvalidInput-free: `tokens` may be empty (all zero then).
CompareStats Summarize(std::span<const TokenComparison> tokens);

// llama.cpp's percentile: linear interpolation at fraction * (n - 1) of the sorted values.
double SortedQuantile(std::span<const double> sorted, double fraction);

}  // namespace kite
