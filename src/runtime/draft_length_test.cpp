#include "runtime/draft_length.h"

#include <gtest/gtest.h>

namespace kite {
namespace {

TEST(DraftLength, GrowsToTheMostWhileDraftsAreKeptAndShrinksOnPartialOnes) {
  DraftLength length({.draft_max = 8, .draft_min = 1});
  EXPECT_EQ(length.Next(), 8);
  length.Verified(8, 3);
  EXPECT_EQ(length.Next(), 4);  // one more than was kept
  length.Verified(4, 4);
  EXPECT_EQ(length.Next(), 8);  // doubled
  length.Verified(8, 8);
  EXPECT_EQ(length.Next(), 8);  // at the most
}

TEST(DraftLength, RepeatedMissesPauseDraftingForLongerEachTime) {
  DraftLength length({.draft_max = 8, .draft_min = 2});
  for (int i = 0; i < DraftLength::kMissesBeforePause; ++i) {
    ASSERT_GT(length.Next(), 0);
    length.Verified(length.Next(), 0);
  }
  EXPECT_EQ(length.Next(), 0);
  for (int i = 0; i < DraftLength::kFirstPause; ++i) length.PlainStep();
  EXPECT_EQ(length.Next(), 2);  // halved down to draft_min, never below it
  for (int i = 0; i < DraftLength::kMissesBeforePause; ++i) length.Verified(2, 0);
  for (int i = 0; i < DraftLength::kFirstPause; ++i) length.PlainStep();
  EXPECT_EQ(length.Next(), 0);  // the second pause is twice as long
  for (int i = 0; i < DraftLength::kFirstPause; ++i) length.PlainStep();
  ASSERT_EQ(length.Next(), 2);
  length.Verified(2, 1);  // a kept token ends the back-off
  for (int i = 0; i < DraftLength::kMissesBeforePause; ++i) length.Verified(2, 0);
  for (int i = 0; i < DraftLength::kFirstPause; ++i) length.PlainStep();
  EXPECT_EQ(length.Next(), 2);
}

TEST(DraftLength, WastedPassesAreBoundedByAFewPerLongestPause) {
  EXPECT_EQ(DraftLength::MaxWastedPasses(1), 3);
  EXPECT_EQ(DraftLength::MaxWastedPasses(100), 12);  // pauses of 8, 16, 32, 64
  // In the long run 3 wasted passes per 259 steps: about 1%.
  EXPECT_LT(DraftLength::MaxWastedPasses(100000), 100000 / 80);
}

}  // namespace
}  // namespace kite
