#include "runtime/draft_length.h"

#include <gtest/gtest.h>

namespace kite {
namespace {

// Memory-bound: a pass of any length costs what a plain step does.
constexpr double kStep = 1.0;

DraftLength Started(DraftLimits limits) {
  DraftLength length(limits);
  EXPECT_EQ(length.Next(), 0);  // the first step is plain, to time it
  length.PlainStep(kStep);
  return length;
}

TEST(DraftLength, GrowsToTheMostWhileDraftsAreKeptAndShrinksOnPartialOnes) {
  DraftLength length = Started({.draft_max = 8, .draft_min = 1});
  EXPECT_EQ(length.Next(), DraftLength::kFirstCap);
  length.Verified(2, 2, kStep);
  EXPECT_EQ(length.Next(), 4);  // doubled
  length.Verified(4, 4, kStep);
  EXPECT_EQ(length.Next(), 8);
  length.Verified(8, 3, kStep);
  EXPECT_EQ(length.Next(), 4);  // one more than was kept
  length.Verified(4, 4, kStep);
  length.Verified(8, 8, kStep);
  EXPECT_EQ(length.Next(), 8);  // at the most
}

TEST(DraftLength, RepeatedMissesPauseDraftingForLongerEachTime) {
  DraftLength length = Started({.draft_max = 8, .draft_min = 2});
  for (int i = 0; i < DraftLength::kMissesBeforePause; ++i) {
    ASSERT_GT(length.Next(), 0);
    length.Verified(length.Next(), 0, kStep);
  }
  EXPECT_EQ(length.Next(), 0);
  for (int i = 0; i < DraftLength::kFirstPause; ++i) length.PlainStep(kStep);
  EXPECT_EQ(length.Next(), 2);  // never below draft_min
  for (int i = 0; i < DraftLength::kMissesBeforePause; ++i) length.Verified(2, 0, kStep);
  for (int i = 0; i < DraftLength::kFirstPause; ++i) length.PlainStep(kStep);
  EXPECT_EQ(length.Next(), 0);  // the second pause is twice as long
  for (int i = 0; i < DraftLength::kFirstPause; ++i) length.PlainStep(kStep);
  ASSERT_EQ(length.Next(), 2);
  length.Verified(2, 1, kStep);  // a kept token ends the back-off
  for (int i = 0; i < DraftLength::kMissesBeforePause; ++i) length.Verified(2, 0, kStep);
  for (int i = 0; i < DraftLength::kFirstPause; ++i) length.PlainStep(kStep);
  EXPECT_EQ(length.Next(), 2);
}

TEST(DraftLength, WhenARunCostsAsMuchAsItsTokensDraftingPauses) {
  // Compute-bound: a run of T tokens costs T steps, so no draft can beat a plain step, however
  // many of its tokens are kept (one pass yields at most k + 1 for the price of k + 1).
  DraftLength length = Started({.draft_max = 8, .draft_min = 1});
  for (int32_t k = 1; k <= 8; ++k) length.Verified(k, k, (k + 1) * kStep);
  EXPECT_EQ(length.Next(), 0);
  for (int i = 0; i < DraftLength::kLongestPause; ++i) length.PlainStep(kStep);
  EXPECT_EQ(length.Next(), 1);  // after the pause, one short try: the text may have changed
}

TEST(DraftLength, PicksTheLengthWithTheMostTokensPerSecond) {
  // Runs of up to 4 tokens cost one step (memory-bound), longer ones a step more per token
  // (compute-bound past 4 rows); every draft is kept. A pass of k yields k + 1 tokens: 4 per
  // step at k = 3, 5 per 2 steps at k = 4.
  auto cost = [](int32_t tokens) { return tokens <= 4 ? kStep : kStep * (tokens - 3); };
  DraftLength length = Started({.draft_max = 8, .draft_min = 1});
  for (int32_t k = 1; k <= 8; ++k) length.Verified(k, k, cost(k + 1));  // time every length
  EXPECT_EQ(length.Next(), 3);
}

TEST(DraftLength, WastedPassesAreBoundedByAFewPerLongestPause) {
  EXPECT_EQ(DraftLength::MaxWastedPasses(1), 3);
  EXPECT_EQ(DraftLength::MaxWastedPasses(100), 12);  // pauses of 8, 16, 32, 64
  // In the long run 3 wasted passes per 259 steps: about 1%.
  EXPECT_LT(DraftLength::MaxWastedPasses(100000), 100000 / 80);
}

}  // namespace
}  // namespace kite
