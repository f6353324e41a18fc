#include "runtime/ngram_drafter.h"

#include <gtest/gtest.h>

#include <vector>

namespace kite {
namespace {

std::vector<int32_t> Propose(NgramDrafter& drafter, const std::vector<int32_t>& context,
                             int32_t max_tokens) {
  auto draft = drafter.Propose(context, max_tokens);
  EXPECT_TRUE(draft.has_value());
  return draft.has_value() ? (*draft)->tokens : std::vector<int32_t>{};
}

TEST(NgramDrafter, CopiesWhatFollowedTheLongestMatchingSuffix) {
  NgramDrafter drafter(1, 3);
  // "7 8 9" occurred once, followed by 10 11 12; "9" alone last occurred before 50.
  const std::vector<int32_t> context = {1, 7, 8, 9, 10, 11, 12, 2, 9, 50, 3, 7, 8, 9};
  EXPECT_EQ(Propose(drafter, context, 2), (std::vector<int32_t>{10, 11}));
  EXPECT_EQ(Propose(drafter, context, 8), (std::vector<int32_t>{10, 11, 12, 2, 9, 50, 3, 7}));
}

TEST(NgramDrafter, PrefersTheMostRecentOccurrence) {
  NgramDrafter drafter(2, 2);
  const std::vector<int32_t> context = {4, 5, 6, 4, 5, 7, 0, 4, 5};
  EXPECT_EQ(Propose(drafter, context, 1), (std::vector<int32_t>{7}));
}

TEST(NgramDrafter, ARunOfOneTokenGivesAFullDraft) {
  NgramDrafter drafter(2, 4);
  const std::vector<int32_t> context = {9, 5, 5, 5, 5, 5, 5, 5};
  // The most recent "5 5 5 5" is one token back; one three tokens back has three after it.
  EXPECT_EQ(Propose(drafter, context, 3), (std::vector<int32_t>{5, 5, 5}));
}

TEST(NgramDrafter, ProposesNothingBelowNgramMin) {
  NgramDrafter drafter(2, 4);
  EXPECT_TRUE(Propose(drafter, {1, 2, 3, 4, 5, 3}, 4).empty());  // only "3" repeats
  EXPECT_TRUE(Propose(drafter, {1}, 4).empty());
  NgramDrafter unigram(1, 4);
  EXPECT_EQ(Propose(unigram, {1, 2, 3, 4, 5, 3}, 4), (std::vector<int32_t>{4, 5, 3}));
}

}  // namespace
}  // namespace kite
