#include "runtime/context_limit.h"

#include <gtest/gtest.h>

#include <numeric>
#include <span>
#include <vector>

#include "runtime/session.h"

namespace kite {
namespace {

TEST(ContextLimit, TokensFitUpToTheLastPosition) {
  EXPECT_TRUE(CheckContextRoom("the prompt", 0, 8, 8).has_value());
  EXPECT_TRUE(CheckContextRoom("the prompt", 6, 2, 8).has_value());
}

TEST(ContextLimit, RefusalGivesTheNumbers) {
  const Status prompt = CheckContextRoom("the prompt", 0, 9, 8);
  ASSERT_FALSE(prompt.has_value());
  EXPECT_EQ(prompt.error().code, ErrorCode::kInvalidInput);
  EXPECT_EQ(prompt.error().message, "the prompt has 9 tokens; the context holds 8");
  const Status more = CheckContextRoom("the prompt", 6, 3, 8);
  ASSERT_FALSE(more.has_value());
  EXPECT_EQ(more.error().message,
            "3 tokens after the 6 already in the context need 9 positions; the context holds 8");
}

std::vector<int32_t> Iota(int32_t n, int32_t first) {
  std::vector<int32_t> ids(n);
  std::iota(ids.begin(), ids.end(), first);
  return ids;
}

TEST(ContextLimit, KeepPromptTailKeepsBosAndTheLastTokens) {
  std::vector<int32_t> ids = Iota(100, 1);  // 1 is BOS
  KeepPromptTail(&ids, /*bos=*/1, /*context_length=*/64, /*n_predict=*/4);
  ASSERT_EQ(ids.size(), 60u);  // 64 - 4 to generate
  EXPECT_EQ(ids[0], 1);
  EXPECT_EQ(ids[1], 42);  // the last 59 of 100
  EXPECT_EQ(ids.back(), 100);

  std::vector<int32_t> no_bos = Iota(100, 1);
  KeepPromptTail(&no_bos, /*bos=*/-1, 64, 4);
  EXPECT_EQ(no_bos, Iota(60, 41));

  // Until the context is full (-n -1), or more than half of it: half is left to generate.
  std::vector<int32_t> unbounded = Iota(100, 1);
  KeepPromptTail(&unbounded, -1, 64, -1);
  EXPECT_EQ(unbounded, Iota(32, 69));
  std::vector<int32_t> many = Iota(100, 1);
  KeepPromptTail(&many, -1, 64, 1000);
  EXPECT_EQ(many, Iota(32, 69));
}

TEST(ContextLimit, KeepPromptTailLeavesAPromptThatFitsAlone) {
  std::vector<int32_t> ids = Iota(60, 1);
  KeepPromptTail(&ids, 1, 64, 4);
  EXPECT_EQ(ids, Iota(60, 1));
}

// A prompt that cannot fit is refused before the session cuts its history to the common prefix:
// the cache keeps what it held.
TEST(ContextLimit, SessionRefusesAPromptBeforeCuttingItsHistory) {
  EngineOptions options;
  options.context_length = 8;
  auto engine = Engine::Load(KITE_SOURCE_DIR "/testdata/reference/llama-gqa", options);
  ASSERT_TRUE(engine.has_value()) << engine.error().message;
  Session session(**engine);
  const std::vector<int32_t> history = {1, 538, 592, 656, 562, 923};
  ASSERT_TRUE(session.Feed(history).has_value());
  const std::vector<int32_t> prompt = {1, 538, 592, 7, 8, 9, 10, 11, 12};  // 3 in common
  auto refused = session.FeedPrompt(prompt);
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().message, "the prompt has 9 tokens; the context holds 8");
  EXPECT_EQ(session.history(), history);

  auto fed = session.Feed(std::span(prompt).first(3));
  ASSERT_FALSE(fed.has_value());
  EXPECT_EQ(fed.error().message,
            "3 tokens after the 6 already in the context need 9 positions; the context holds 8");
}

}  // namespace
}  // namespace kite
