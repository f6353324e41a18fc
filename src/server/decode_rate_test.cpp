#include "server/decode_rate.h"

#include <gtest/gtest.h>

namespace kite {
namespace {

using std::chrono::milliseconds;

TEST(DecodeRate, IsTheWindowsCountOverItsSpan) {
  const auto start = DecodeRate::Clock::now();
  DecodeRate rate(start);
  EXPECT_EQ(rate.PerSecond(start + milliseconds(500)), 0.0);
  rate.Add(50, start + milliseconds(100));
  rate.Add(50, start + milliseconds(400));
  // 100 tokens in the first half second.
  EXPECT_NEAR(rate.PerSecond(start + milliseconds(500)), 200.0, 1e-6);
  rate.Add(300, start + milliseconds(2500));
  // 400 tokens over 3 s.
  EXPECT_NEAR(rate.PerSecond(start + milliseconds(3000)), 400.0 / 3.0, 1e-6);
}

TEST(DecodeRate, ForgetsWhatLeftTheWindow) {
  const auto start = DecodeRate::Clock::now();
  DecodeRate rate(start);
  rate.Add(1000, start + milliseconds(100));
  rate.Add(60, start + milliseconds(7200));
  // The window is seconds 2..7 (the current one partial): only the 60 are in it.
  EXPECT_NEAR(rate.PerSecond(start + milliseconds(7500)), 60.0 / 5.5, 1e-6);
  // Long idle: nothing.
  EXPECT_EQ(rate.PerSecond(start + milliseconds(60000)), 0.0);
}

}  // namespace
}  // namespace kite
