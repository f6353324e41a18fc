#include "server/slot_choice.h"

#include <gtest/gtest.h>

#include <vector>

namespace kite {
namespace {

TEST(SlotChoice, ReusableLengthLeavesTheLastPromptTokenToFeed) {
  const std::vector<int32_t> history{1, 2, 3, 4};
  EXPECT_EQ(ReusableLength(history, std::vector<int32_t>{1, 2, 3, 4}), 3);
  EXPECT_EQ(ReusableLength(history, std::vector<int32_t>{1, 2, 3, 4, 5}), 4);
  EXPECT_EQ(ReusableLength(history, std::vector<int32_t>{1, 2, 9}), 2);
  EXPECT_EQ(ReusableLength(history, std::vector<int32_t>{7}), 0);
  EXPECT_EQ(ReusableLength({}, std::vector<int32_t>{1, 2}), 0);
}

TEST(SlotChoice, AChatsNextTurnContinuesInPlace) {
  const std::vector<int32_t> turn1{1, 10, 11, 12, 13}, other{1, 20, 21};
  const std::vector<SlotView> slots{{.history = other, .busy = false, .last_used = 2},
                                    {.history = turn1, .busy = false, .last_used = 1},
                                    {.history = {}, .busy = false, .last_used = 0}};
  const std::vector<int32_t> turn2{1, 10, 11, 12, 13, 14, 15};
  const auto choice = ChooseSlot(slots, turn2);
  ASSERT_TRUE(choice);
  EXPECT_EQ(choice->slot, 1);
  EXPECT_EQ(choice->source, -1);
  EXPECT_EQ(choice->reuse, 5);
}

TEST(SlotChoice, ASharedPrefixIsCopiedIntoAnEmptySlotRatherThanOverwritingACache) {
  const std::vector<int32_t> system_a{1, 5, 6, 7, 8, 30, 31};
  const std::vector<SlotView> slots{{.history = system_a, .busy = false, .last_used = 1},
                                    {.history = {}, .busy = false, .last_used = 0}};
  const std::vector<int32_t> system_b{1, 5, 6, 7, 8, 40};
  const auto choice = ChooseSlot(slots, system_b);
  ASSERT_TRUE(choice);
  EXPECT_EQ(choice->slot, 1);
  EXPECT_EQ(choice->source, 0);
  EXPECT_EQ(choice->reuse, 5);
}

TEST(SlotChoice, ABusySlotCanBeCopiedFromButNeverTaken) {
  const std::vector<int32_t> running{1, 5, 6, 7, 8, 9}, stale{2, 3};
  const std::vector<SlotView> slots{{.history = running, .busy = true, .last_used = 3},
                                    {.history = stale, .busy = false, .last_used = 1}};
  const auto choice = ChooseSlot(slots, std::vector<int32_t>{1, 5, 6, 50});
  ASSERT_TRUE(choice);
  EXPECT_EQ(choice->slot, 1);
  EXPECT_EQ(choice->source, 0);
  EXPECT_EQ(choice->reuse, 3);

  const std::vector<SlotView> all_busy{{.history = running, .busy = true, .last_used = 3}};
  EXPECT_FALSE(ChooseSlot(all_busy, std::vector<int32_t>{1, 2}));
}

TEST(SlotChoice, WithoutSharedTokensTheLeastValuableCacheGoesLeastRecentlyUsedFirst) {
  const std::vector<int32_t> long_cache{1, 2, 3, 4, 5, 6}, short_old{7, 8}, short_new{9, 10};
  const std::vector<SlotView> slots{{.history = long_cache, .busy = false, .last_used = 1},
                                    {.history = short_new, .busy = false, .last_used = 5},
                                    {.history = short_old, .busy = false, .last_used = 2}};
  const auto choice = ChooseSlot(slots, std::vector<int32_t>{20, 21});
  ASSERT_TRUE(choice);
  EXPECT_EQ(choice->slot, 2);
  EXPECT_EQ(choice->reuse, 0);
}

}  // namespace
}  // namespace kite
