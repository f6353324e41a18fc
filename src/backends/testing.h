// Test helpers for backend tests (header-only: included by *_test.cpp files only).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <vector>

namespace kite::testing {

// n values drawn uniformly from [lo, hi), the same for the same seed.
inline std::vector<float> Random(int64_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> values(n);
  for (float& v : values) v = dist(rng);
  return values;
}

// Expects |got - want| <= atol + rtol·|want| element-wise; reports the first few misses and the
// largest error.
inline void ExpectClose(std::span<const float> got, std::span<const double> want, double rtol,
                        double atol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int misses = 0;
  double worst = 0.0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double error = std::abs(static_cast<double>(got[i]) - want[i]);
    const double allowed = atol + rtol * std::abs(want[i]);
    worst = std::max(worst, error / allowed);
    if (!(error <= allowed) && ++misses <= 5) {
      ADD_FAILURE() << what << ": element " << i << " is " << got[i] << ", expected " << want[i]
                    << " (error " << error << " > " << allowed << ")";
    }
  }
  EXPECT_EQ(misses, 0) << what << ": " << misses << " of " << got.size()
                       << " elements out of tolerance; worst error/allowed " << worst;
}

inline void ExpectClose(std::span<const float> got, std::span<const float> want, double rtol,
                        double atol, const std::string& what) {
  std::vector<double> wide(want.begin(), want.end());
  ExpectClose(got, wide, rtol, atol, what);
}

}  // namespace kite::testing
