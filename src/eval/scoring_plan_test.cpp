#include "eval/scoring_plan.h"

#include <gtest/gtest.h>

#include <string>

namespace kite {
namespace {

std::unique_ptr<Tokenizer> DemoTokenizer() {
  auto tokenizer = Tokenizer::Load(std::string(KITE_SOURCE_DIR) + "/models/demo");
  EXPECT_TRUE(tokenizer.has_value()) << tokenizer.error().message;
  return tokenizer ? std::move(*tokenizer) : nullptr;
}

// Sixty words: about 70 tokens of the demo tokenizer.
std::string Text() {
  std::string text;
  for (int i = 0; i < 60; ++i) text += i % 2 ? "fox " : "the ";
  return text;
}

// llama.cpp's chunks: BOS then the text's ids, cut in whole chunks of N; each chunk's first token
// replaced by BOS; rows N/2 .. N-2 scored against the chunk's tokens N/2+1 .. N-1.
TEST(ScoringPlanTest, LlamaChunksScoreTheSecondHalfAfterBos) {
  auto tokenizer = DemoTokenizer();
  ASSERT_TRUE(tokenizer);
  const std::string text = Text();
  const std::vector<int32_t> ids = *tokenizer->Encode(text, /*add_special=*/false);
  const int32_t bos = tokenizer->bos_id();
  ASSERT_GE(bos, 0);
  auto plan = PlanScoring(*tokenizer, text, {.protocol = ScoringProtocol::kLlama, .ctx = 16});
  ASSERT_TRUE(plan.has_value()) << plan.error().message;
  EXPECT_EQ(plan->text_tokens, static_cast<int64_t>(ids.size()) + 1);
  EXPECT_EQ(plan->available_windows, plan->text_tokens / 16);
  ASSERT_EQ(plan->windows.size(), static_cast<size_t>(plan->available_windows));
  std::vector<int32_t> with_bos = {bos};
  with_bos.insert(with_bos.end(), ids.begin(), ids.end());
  for (size_t i = 0; i < plan->windows.size(); ++i) {
    const ScoringWindow& window = plan->windows[i];
    ASSERT_EQ(window.input.size(), 16u);
    EXPECT_EQ(window.input[0], bos);
    for (size_t k = 1; k < 16; ++k) EXPECT_EQ(window.input[k], with_bos[i * 16 + k]);
    EXPECT_EQ(window.first_row, 8);
    ASSERT_EQ(window.targets.size(), 7u);  // 16 - 1 - 16/2
    for (size_t t = 0; t < 7; ++t) EXPECT_EQ(window.targets[t], with_bos[i * 16 + 9 + t]);
    EXPECT_EQ(window.first_target, static_cast<int64_t>(i * 16 + 9));
  }
  EXPECT_EQ(plan->scored_tokens(), 7 * plan->available_windows);

  auto two = PlanScoring(*tokenizer, text,
                         {.protocol = ScoringProtocol::kLlama, .ctx = 16, .max_windows = 2});
  ASSERT_TRUE(two.has_value());
  EXPECT_EQ(two->windows.size(), 2u);
  EXPECT_EQ(two->windows[1].input, plan->windows[1].input);
}

TEST(ScoringPlanTest, LlamaProtocolNeedsTwoChunks) {
  auto tokenizer = DemoTokenizer();
  ASSERT_TRUE(tokenizer);
  auto plan = PlanScoring(*tokenizer, "the fox", {.protocol = ScoringProtocol::kLlama, .ctx = 16});
  ASSERT_FALSE(plan.has_value());
  EXPECT_NE(plan.error().message.find("needs at least 32 tokens (two chunks of --ctx 16)"),
            std::string::npos)
      << plan.error().message;
}

// Kite's windows: every token scored, the first from BOS; --chunks keeps the first windows.
TEST(ScoringPlanTest, KiteWindowsScoreEveryToken) {
  auto tokenizer = DemoTokenizer();
  ASSERT_TRUE(tokenizer);
  const std::string text = Text();
  const std::vector<int32_t> ids = *tokenizer->Encode(text, /*add_special=*/false);
  auto plan = PlanScoring(*tokenizer, text, {.ctx = 16});
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->scored_tokens(), static_cast<int64_t>(ids.size()));
  EXPECT_EQ(plan->windows[1].input[0], tokenizer->bos_id());
  EXPECT_EQ(plan->windows[1].input[1], ids[16]);
  EXPECT_EQ(plan->windows[1].targets[0], ids[16]);
  auto first = PlanScoring(*tokenizer, text, {.ctx = 16, .max_windows = 1});
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->scored_tokens(), 16);
  EXPECT_EQ(first->available_windows, plan->available_windows);

  auto bad = PlanScoring(*tokenizer, text, {.ctx = 16, .max_windows = -1});
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message.find("--chunks -1"), std::string::npos) << bad.error().message;
  auto protocol = ParseScoringProtocol("lama");
  ASSERT_FALSE(protocol.has_value());
  EXPECT_EQ(protocol.error().message, "--protocol lama: must be one of kite, llama");
}

}  // namespace
}  // namespace kite
