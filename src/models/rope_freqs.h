// llama.cpp stores Llama 3.1's rope scaling not as parameters but as a tensor, rope_freqs.weight
// [rotary_dim / 2]: the divisor of each pair's frequency. Kite's rope op takes the parameters
// (factor, low/high frequency factors, original context), so the loader recovers parameters that
// reproduce every divisor, and refuses divisors that no such parameters give.
#pragma once

#include <span>

#include "base/status.h"
#include "graph/ops.h"

namespace kite {

// `rope` holds theta and rotary_dim; its scaling fields are replaced. Pairs whose divisor is 1
// keep their frequency, pairs at the largest divisor (the factor) are slowed by it, and those in
// between lie on Llama 3's blend, which is linear in 1 / wavelength. All divisors 1: no scaling;
// all equal: linear scaling. `what` names the tensor in errors.
Status RopeScalingFromDivisors(std::span<const float> divisors, const std::string& what,
                               RopeAttrs* rope);

// The divisor of pair `i` that `rope`'s scaling applies (1 for none): inv_freq / adjusted.
double RopeDivisor(const RopeAttrs& rope, int32_t i);

}  // namespace kite
