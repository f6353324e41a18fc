#include "eval/reference_logits.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace kite {
namespace {

std::vector<double> LogSoftmax(const std::vector<float>& logits) {
  double max = logits[0], sum = 0.0;
  for (float v : logits) max = std::max<double>(max, v);
  for (float v : logits) sum += std::exp(v - max);
  std::vector<double> out;
  for (float v : logits) out.push_back(v - max - std::log(sum));
  return out;
}

// The encoded row keeps log-probabilities to ~1e-4 nats, so the KL divergence from it matches
// the exact one to well under 1e-4, and NLL, Δp and top-1 are exact; a row against itself
// has a divergence of (nearly) 0.
TEST(ReferenceLogitsTest, KlDivergenceFromTheEncodedRowMatchesTheExactOne) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  const int vocab = 1000;
  std::vector<float> p_logits(vocab), q_logits(vocab);
  for (int i = 0; i < vocab; ++i) {
    p_logits[i] = normal(rng);
    q_logits[i] = p_logits[i] + 0.3f * normal(rng);
  }
  p_logits[17] = 40.0f;  // one token far ahead: most others fall below the 24-nat floor
  q_logits[17] = 39.0f;
  const int32_t target = 5;
  std::vector<uint8_t> row(ReferenceRowBytes(vocab));
  EncodeReferenceRow(p_logits, target, row);

  const std::vector<double> lp = LogSoftmax(p_logits), lq = LogSoftmax(q_logits);
  double kld = 0.0;
  for (int i = 0; i < vocab; ++i) kld += std::exp(lp[i]) * (lp[i] - lq[i]);
  const TokenComparison got = CompareToReference(q_logits, target, row);
  EXPECT_NEAR(got.kld, kld, 1e-5 + 1e-4 * kld);
  EXPECT_NEAR(got.nll, -lq[target], 1e-9);
  EXPECT_NEAR(got.nll_ref, -lp[target], 1e-4);
  EXPECT_NEAR(got.p_diff, std::exp(lq[target]) - std::exp(lp[target]), 1e-9);
  EXPECT_TRUE(got.same_top);

  const TokenComparison self = CompareToReference(p_logits, target, row);
  EXPECT_LT(self.kld, 1e-7);
  EXPECT_TRUE(self.same_top);
  q_logits[3] = 50.0f;
  EXPECT_FALSE(CompareToReference(q_logits, target, row).same_top);
}

}  // namespace
}  // namespace kite
