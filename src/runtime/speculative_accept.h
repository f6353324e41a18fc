// The acceptance rule of speculative sampling (Leviathan et al. 2023, "Fast Inference from
// Transformers via Speculative Decoding", and Chen et al. 2023): a drafted token d, drawn from
// the draft's distribution q, is kept with probability min(1, p(d) / q(d)), where p is the
// target's distribution at that position; on rejection the token is drawn from
// norm(max(0, p - q)) instead. Whatever q is, the token that comes out is distributed as p,
// so speculative output is a sample of the same distribution as plain sampling. With greedy
// decoding p is a point mass on the argmax, and the rule reduces to "keep d if it is the
// argmax, else take the argmax". An n-gram draft is certain: q is a point mass on d, so d is
// kept with probability p(d) and a rejection draws from p without d.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "runtime/sampler.h"

namespace kite {

struct Verdict {
  bool accepted = false;
  int32_t token = -1;  // the draft when accepted; otherwise the replacement
};

class AcceptanceRule {
 public:
  // p: the target's distribution (Sampler::Distribution); q: the draft's, or empty for a point
  // mass on `draft`. u_accept and u_resample: independent uniform numbers in [0, 1).
  Verdict Judge(std::span<const TokenProb> p, std::span<const TokenProb> q, int32_t draft,
                double u_accept, double u_resample);

 private:
  std::vector<TokenProb> p_;         // scratch: p sorted by id
  std::vector<TokenProb> q_;         // scratch: q sorted by id
  std::vector<TokenProb> residual_;  // max(0, p - q), unnormalised
};

}  // namespace kite
