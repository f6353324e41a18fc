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

// A pass of each length from 1 to draft_max, all kept, costing cost(k + 1): each twice, the
// first (which compiles the length's graph) at 100 steps, which must not count.
template <typename Cost>
void TimeEveryLength(DraftLength& length, int32_t draft_max, Cost cost) {
  for (int32_t k = 1; k <= draft_max; ++k) {
    length.Verified(k, k, 100 * kStep);
    length.Verified(k, k, cost(k + 1));
  }
}

TEST(DraftLength, AFirstPassOfALengthIsNotTimed) {
  DraftLength length = Started({.draft_max = 8, .draft_min = 1});
  ASSERT_EQ(length.Next(), 2);
  length.Verified(2, 2, 100 * kStep);  // compiling: priced as a plain step is, not at 100
  EXPECT_EQ(length.Next(), 4);
  length.Verified(4, 4, 100 * kStep);
  EXPECT_EQ(length.Next(), 8);
  length.Verified(4, 4, 100 * kStep);  // the second pass is timed: 4 is dear now
  length.Verified(8, 8, 100 * kStep);
  length.Verified(8, 8, 100 * kStep);
  // Passes of 4 and 8 drafts cost 100 steps now; 1 to 3, untimed, are priced as a plain step.
  EXPECT_EQ(length.Next(), 3);
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

// Three passes that keep nothing, each taking 2 steps. The first of each length (3 and 2
// tokens) is charged at its length's price, a plain step while untimed: 0 s over. The third is
// timed: 1 s over its one token, and a missed pass of 1 draft is priced 1 s over from then on.
void MissThrice(DraftLength& length) {
  for (int32_t drafted : {2, 1, 1}) {
    ASSERT_EQ(length.Next(), drafted);
    length.Verified(drafted, 0, 2 * kStep);
  }
}

TEST(DraftLength, APauseLastsUntilAMissedProbeWouldKeepTheCostUnderTheBudget) {
  ASSERT_EQ(DraftLength::kBudget, 0.03);
  DraftLength length = Started({.draft_max = 8, .draft_min = 1});  // 1 s so far
  length.CaughtUp(100, 0.5);  // a draft model reads the prompt: 0.5 s over, 5 ms a token
  MissThrice(length);         // 1.5 s over in 5.5 s
  // After p steps a missed probe costs 5 ms a token caught up and 1 s of pass:
  // 1.5 + 0.005·p + 1 <= 0.03·(5.5 + p) from p = 93.4 on: 94 steps (not the first pause's 8).
  for (int i = 0; i < 93; ++i) {
    ASSERT_EQ(length.Next(), 0) << i;
    length.PlainStep(kStep);
  }
  EXPECT_EQ(length.Next(), 0);
  length.PlainStep(kStep);
  EXPECT_EQ(length.Next(), 1);
}

TEST(DraftLength, CatchingUpDearerThanTheBudgetAStepStopsDrafting) {
  DraftLength length = Started({.draft_max = 8, .draft_min = 1});
  length.CaughtUp(10, 0.5);  // 50 ms a token: more than 3% of a 1 s step
  MissThrice(length);
  for (int i = 0; i < 100000; ++i) {
    ASSERT_EQ(length.Next(), 0) << i;
    length.PlainStep(kStep);
  }
}

TEST(DraftLength, DraftingThatSavedTimePausesOnlyForTheDoubling) {
  DraftLength length = Started({.draft_max = 8, .draft_min = 1});
  length.CaughtUp(10, 0.5);  // catching up dear, as above
  for (int i = 0; i < 4; ++i) length.Verified(2, 2, kStep);  // 3 tokens a step: 2 s saved each
  for (int i = 0; i < DraftLength::kMissesBeforePause; ++i) {
    ASSERT_GT(length.Next(), 0);
    length.Verified(length.Next(), 0, 2 * kStep);  // at most 1 s over each: still ahead
  }
  for (int i = 0; i < DraftLength::kFirstPause; ++i) {
    ASSERT_EQ(length.Next(), 0) << i;
    length.PlainStep(kStep);
  }
  EXPECT_GT(length.Next(), 0);
}

TEST(DraftLength, WhenARunCostsAsMuchAsItsTokensDraftingPauses) {
  // Compute-bound: a run of T tokens costs T steps, so no draft can beat a plain step, however
  // many of its tokens are kept (one pass yields at most k + 1 for the price of k + 1).
  DraftLength length = Started({.draft_max = 8, .draft_min = 1});
  TimeEveryLength(length, 8, [](int32_t tokens) { return tokens * kStep; });
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
  TimeEveryLength(length, 8, cost);
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
