#include "models/rope_freqs.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <vector>

namespace kite {
namespace {

struct Llama3 {
  double factor, low, high, original;
};

// convert_hf_to_gguf.py's rope_freqs for Llama 3 scaling, written from its description: pair i
// of a head of `dim` has frequency theta^(-2i/dim) and wavelength 2π/freq; wavelengths below
// original/high keep their frequency, those above original/low are divided by factor, and in
// between the divisor is 1 / ((1 - s)/factor + s), s = (original/wavelength - low)/(high - low).
std::vector<float> Divisors(double theta, int dim, const Llama3& p) {
  std::vector<float> out;
  for (int i = 0; i < dim / 2; ++i) {
    const double wavelength = 2 * std::numbers::pi * std::pow(theta, 2.0 * i / dim);
    if (wavelength < p.original / p.high) {
      out.push_back(1.0f);
    } else if (wavelength > p.original / p.low) {
      out.push_back(static_cast<float>(p.factor));
    } else {
      const double s = (p.original / wavelength - p.low) / (p.high - p.low);
      out.push_back(static_cast<float>(1.0 / ((1 - s) / p.factor + s)));
    }
  }
  return out;
}

// The recovered parameters, put through the same formula, give the stored divisors back.
void ExpectRecovered(double theta, int dim, const Llama3& p) {
  RopeAttrs rope;
  rope.theta = static_cast<float>(theta);
  rope.rotary_dim = dim;
  const std::vector<float> want = Divisors(theta, dim, p);
  ASSERT_TRUE(RopeScalingFromDivisors(want, "rope_freqs", &rope).has_value());
  EXPECT_EQ(rope.scaling, RopeScaling::kLlama3);
  EXPECT_NEAR(rope.factor, p.factor, 1e-6);
  const std::vector<float> got = Divisors(theta, dim,
                                          {rope.factor, rope.low_freq_factor, rope.high_freq_factor,
                                           static_cast<double>(rope.original_max_position)});
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], 1e-4 * want[i]) << "pair " << i;
  }
}

TEST(RopeFreqsTest, RecoversLlama31Scaling) {
  ExpectRecovered(500000.0, 128, {8, 1, 4, 8192});  // Llama 3.1 8B
}

TEST(RopeFreqsTest, RecoversLlama32Scaling) {
  ExpectRecovered(500000.0, 64, {32, 1, 4, 8192});  // Llama 3.2 1B
}

TEST(RopeFreqsTest, RecoversScalingWithOneBlendedPair) {
  // The llama3-rope reference model: pair 0 kept, pair 1 blended, the rest slowed 8x.
  ExpectRecovered(10000.0, 16, {8, 1, 4, 32});
}

TEST(RopeFreqsTest, RecoversAStepWithNoBlendedPair) {
  // Kept pairs 0..1 and slowed pairs 2..7, nothing between: any boundary in the gap will do.
  ExpectRecovered(10000.0, 16, {4, 1.9, 2.0, 64});
}

TEST(RopeFreqsTest, AllOnesIsNoScaling) {
  RopeAttrs rope{.theta = 10000.0f, .rotary_dim = 8};
  ASSERT_TRUE(RopeScalingFromDivisors(std::vector<float>(4, 1.0f), "f", &rope).has_value());
  EXPECT_EQ(rope.scaling, RopeScaling::kNone);
}

TEST(RopeFreqsTest, AllEqualIsLinearScaling) {
  RopeAttrs rope{.theta = 10000.0f, .rotary_dim = 8};
  ASSERT_TRUE(RopeScalingFromDivisors(std::vector<float>(4, 4.0f), "f", &rope).has_value());
  EXPECT_EQ(rope.scaling, RopeScaling::kLinear);
  EXPECT_FLOAT_EQ(rope.factor, 4.0f);
}

TEST(RopeFreqsTest, RefusesDivisorsThatAreNotLlama3) {
  RopeAttrs rope{.theta = 10000.0f, .rotary_dim = 8};
  // Slowed, kept, slowed: Llama 3 keeps the high frequencies (low pairs), never the reverse.
  auto result = RopeScalingFromDivisors(std::vector<float>{8, 1, 8, 8}, "rope_freqs.weight", &rope);
  ASSERT_FALSE(result.has_value());
  EXPECT_EQ(result.error().code, ErrorCode::kUnsupported);
  EXPECT_NE(result.error().message.find("rope_freqs.weight"), std::string::npos);
  // Two blended pairs off Llama 3's line.
  result = RopeScalingFromDivisors(std::vector<float>{1, 1.5f, 7.5f, 2}, "f", &rope);
  EXPECT_FALSE(result.has_value());
}

TEST(RopeFreqsTest, RefusesBadSizesAndValues) {
  RopeAttrs rope{.theta = 10000.0f, .rotary_dim = 8};
  auto result = RopeScalingFromDivisors(std::vector<float>(3, 1.0f), "rope_freqs.weight", &rope);
  ASSERT_FALSE(result.has_value());
  EXPECT_NE(result.error().message.find("3 entries, expected one per rotary pair (4)"),
            std::string::npos);
  result = RopeScalingFromDivisors(std::vector<float>{1, 0.5f, 1, 1}, "f", &rope);
  ASSERT_FALSE(result.has_value());
  EXPECT_NE(result.error().message.find("f[1]"), std::string::npos);
  result = RopeScalingFromDivisors(std::vector<float>{1, NAN, 1, 1}, "f", &rope);
  EXPECT_FALSE(result.has_value());
}

}  // namespace
}  // namespace kite
