#include "runtime/sampler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <vector>

namespace kite {
namespace {

SamplerConfig AllOff() {
  SamplerConfig config;
  config.top_k = 0;
  config.top_p = 1.0f;
  config.min_p = 0.0f;
  config.temperature = 1.0f;
  return config;
}

// Logits whose softmax is exactly `probs`.
std::vector<float> LogitsOf(std::vector<double> probs) {
  std::vector<float> logits;
  for (double p : probs) logits.push_back(static_cast<float>(std::log(p)));
  return logits;
}

std::map<int32_t, double> Frequencies(Sampler& sampler, const std::vector<float>& logits, int draws) {
  std::map<int32_t, double> counts;
  for (int i = 0; i < draws; ++i) counts[sampler.Sample(logits, {})] += 1.0 / draws;
  return counts;
}

TEST(Sampler, GreedyTakesArgmax) {
  SamplerConfig config = AllOff();
  config.temperature = 0.0f;
  Sampler sampler(config, 4);
  EXPECT_EQ(sampler.Sample(std::vector<float>{0.1f, 2.0f, -1.0f, 1.9f}, {}), 1);
}

TEST(Sampler, RepetitionPenaltyDividesPositiveAndMultipliesNegative) {
  SamplerConfig config = AllOff();
  config.temperature = 0.0f;
  config.repeat_penalty = 2.0f;
  Sampler sampler(config, 3);
  // Token 0: 3.0 / 2 = 1.5 < token 2's 2.0. Token 1 (-0.5 → -1.0) stays last.
  const std::vector<int32_t> history = {0, 1, 0};
  EXPECT_EQ(sampler.Sample(std::vector<float>{3.0f, -0.5f, 2.0f}, history), 2);
  // Without the token in history, 3.0 wins.
  EXPECT_EQ(sampler.Sample(std::vector<float>{3.0f, -0.5f, 2.0f}, std::vector<int32_t>{1}), 0);
}

TEST(Sampler, FrequencyAndPresencePenaltiesCountOccurrencesInWindow) {
  SamplerConfig config = AllOff();
  config.temperature = 0.0f;
  config.frequency_penalty = 0.4f;
  config.presence_penalty = 0.5f;
  config.penalty_last_n = 3;
  Sampler sampler(config, 3);
  // Window = last 3 tokens {0, 0, 1}: token 0: 2.0 - 2*0.4 - 0.5 = 0.7; token 1: 1.5 - 0.9 = 0.6;
  // token 2 (only outside the window): 0.65 untouched → token 0 still wins by 0.05.
  EXPECT_EQ(sampler.Sample(std::vector<float>{2.0f, 1.5f, 0.65f}, std::vector<int32_t>{2, 0, 0, 1}), 0);
  // One more 0 in the window: {0, 0, 0}: 2.0 - 1.2 - 0.5 = 0.3 < 1.5.
  EXPECT_EQ(sampler.Sample(std::vector<float>{2.0f, 1.5f, 0.65f}, std::vector<int32_t>{0, 0, 0}), 1);
}

TEST(Sampler, DrawsFollowTheDistribution) {
  Sampler sampler(AllOff(), 3);
  auto freq = Frequencies(sampler, LogitsOf({0.5, 0.3, 0.2}), 20000);
  EXPECT_NEAR(freq[0], 0.5, 0.02);
  EXPECT_NEAR(freq[1], 0.3, 0.02);
  EXPECT_NEAR(freq[2], 0.2, 0.02);
}

TEST(Sampler, TopPKeepsSmallestSetReachingP) {
  SamplerConfig config = AllOff();
  config.top_p = 0.7f;  // 0.5 + 0.3 = 0.8 >= 0.7: keeps {0, 1}, renormalised to 5/8, 3/8
  Sampler sampler(config, 3);
  auto freq = Frequencies(sampler, LogitsOf({0.5, 0.3, 0.2}), 20000);
  EXPECT_EQ(freq.count(2), 0u);
  EXPECT_NEAR(freq[0], 0.625, 0.02);
}

TEST(Sampler, MinPDropsTokensBelowFractionOfBest) {
  SamplerConfig config = AllOff();
  config.min_p = 0.5f;  // threshold 0.25: keeps 0.5 and 0.3, drops 0.2
  Sampler sampler(config, 3);
  auto freq = Frequencies(sampler, LogitsOf({0.5, 0.3, 0.2}), 20000);
  EXPECT_EQ(freq.count(2), 0u);
  EXPECT_NEAR(freq[1], 0.375, 0.02);
}

TEST(Sampler, TopKKeepsKBest) {
  SamplerConfig config = AllOff();
  config.top_k = 1;
  Sampler sampler(config, 3);
  auto freq = Frequencies(sampler, LogitsOf({0.3, 0.5, 0.2}), 500);
  EXPECT_DOUBLE_EQ(freq[1], 1.0);
}

TEST(Sampler, TemperatureFlattens) {
  SamplerConfig config = AllOff();
  config.temperature = 2.0f;  // p ∝ sqrt(p): sqrt(.5), sqrt(.3), sqrt(.2) normalised
  Sampler sampler(config, 3);
  auto freq = Frequencies(sampler, LogitsOf({0.5, 0.3, 0.2}), 20000);
  const double total = std::sqrt(0.5) + std::sqrt(0.3) + std::sqrt(0.2);
  EXPECT_NEAR(freq[0], std::sqrt(0.5) / total, 0.02);
  EXPECT_NEAR(freq[2], std::sqrt(0.2) / total, 0.02);
}

TEST(Sampler, SameSeedSameTokensOtherSeedOtherTokens) {
  const std::vector<float> logits(64, 0.0f);  // uniform: every draw is pure RNG
  auto run = [&](uint64_t seed) {
    SamplerConfig config = AllOff();
    config.seed = seed;
    Sampler sampler(config, 64);
    std::vector<int32_t> out;
    for (int i = 0; i < 32; ++i) out.push_back(sampler.Sample(logits, {}));
    return out;
  };
  EXPECT_EQ(run(7), run(7));
  EXPECT_NE(run(7), run(8));
}

}  // namespace
}  // namespace kite
