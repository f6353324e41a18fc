// The rules of the doctor's checks that work without a model: loop detection and the RoPE
// geometry, on values worked out by hand (the figures of published configs quoted in
// rope_config_check.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "eval/doctor/checks.h"

namespace kite::doctor {
namespace {

TEST(DoctorLoop, OneTokenRepeatedIsALoop) {
  const std::vector<int32_t> ids = {5, 6, 7, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9};
  const RepetitionLoop loop = FindRepetitionLoop(ids);
  EXPECT_EQ(loop.period, 1);
  EXPECT_EQ(loop.length, 13);
}

TEST(DoctorLoop, ShortCycleIsALoop) {
  std::vector<int32_t> ids = {1, 2};
  for (int i = 0; i < 5; ++i) ids.insert(ids.end(), {7, 8, 9});
  const RepetitionLoop loop = FindRepetitionLoop(ids);
  EXPECT_EQ(loop.period, 3);
  EXPECT_EQ(loop.length, 15);
}

TEST(DoctorLoop, TooShortOrTooLongCyclesAreNot) {
  // Eleven repeats: below the 12 tokens a loop needs.
  EXPECT_EQ(FindRepetitionLoop(std::vector<int32_t>{1, 2, 3, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4}).period, 0);
  // A cycle of 6 tokens said three times is what a small model does: not "immediate".
  std::vector<int32_t> sentence;
  for (int i = 0; i < 3; ++i) sentence.insert(sentence.end(), {10, 11, 12, 13, 14, 15});
  EXPECT_EQ(FindRepetitionLoop(sentence).period, 0);
  // The loop must reach the end: a repetition the model left is none.
  std::vector<int32_t> left = {3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 4, 5};
  EXPECT_EQ(FindRepetitionLoop(left).period, 0);
  EXPECT_EQ(FindRepetitionLoop(std::vector<int32_t>{}).period, 0);
}

RopeAttrs Rope(float theta, int32_t rotary_dim) {
  RopeAttrs rope;
  rope.theta = theta;
  rope.rotary_dim = rotary_dim;
  return rope;
}

TEST(DoctorRope, SlowestPairTurnOfPublishedConfigs) {
  // Llama 2: 4096 * 10000^(-126/128) = 0.473 rad.
  EXPECT_NEAR(SlowestPairTurn(Rope(10000, 128), 4096), 4096 * std::pow(10000.0, -126.0 / 128), 1e-9);
  EXPECT_NEAR(SlowestPairTurn(Rope(10000, 128), 4096), 0.473, 0.001);
  // Llama 3 8B: 8192 * 500000^(-126/128) = 0.0202 rad.
  EXPECT_NEAR(SlowestPairTurn(Rope(500000, 128), 8192), 0.0202, 0.0001);
  // Base 10x too small for Llama 2's context: past half a turn.
  EXPECT_GT(SlowestPairTurn(Rope(1000, 128), 4096), M_PI);
  // Linear scaling by 4 slows every pair 4x.
  RopeAttrs scaled = Rope(10000, 128);
  scaled.scaling = RopeScaling::kLinear;
  scaled.factor = 4;
  EXPECT_NEAR(SlowestPairTurn(scaled, 16384), SlowestPairTurn(Rope(10000, 128), 4096), 1e-9);
}

TEST(DoctorRope, DeadPairsOfTooLargeBases) {
  EXPECT_EQ(DeadPairs(Rope(10000, 128), 4096), 0);
  EXPECT_EQ(DeadPairs(Rope(500000, 128), 8192), 0);
  // Llama 3 with 10x its base: pairs i with 8192 * (5e6)^(-2i/128) < 0.01, i >= 57 of 64.
  EXPECT_EQ(DeadPairs(Rope(5000000, 128), 8192), 7);
}

TEST(DoctorRope, F32AngleErrorGrowsWithThePosition) {
  const RopeAttrs rope = Rope(500000, 128);
  // The fastest pair's angle is the position itself, exact in f32 below 2^24.
  EXPECT_LT(F32AngleError(rope, 255), 1e-4);
  // Near 131071 f32 spacing is 2^-6 = 0.0156: errors up to about half of it, from rounding the
  // product and the inverse frequencies.
  const double at_128k = F32AngleError(rope, 131071);
  EXPECT_GT(at_128k, 1e-3);
  EXPECT_LT(at_128k, 0.0156);
  EXPECT_GT(F32AngleError(rope, 1048575), at_128k);
}

}  // namespace
}  // namespace kite::doctor
