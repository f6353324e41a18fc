#include "eval/perplexity.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "models/test_model.h"

namespace kite {
namespace {

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

constexpr std::string_view kText = "the quick brown fox jumps over the lazy dog";

std::unique_ptr<Engine> LoadTestModel(const std::string& path) {
  EngineOptions options;
  options.context_length = 16;
  options.prefill_chunk = 16;
  auto engine = Engine::Load(path, options);
  EXPECT_TRUE(engine.has_value()) << engine.error().message;
  return engine ? std::move(*engine) : nullptr;
}

TEST(PerplexityTest, LogitRowsSpanTheWholeEmbeddingPastTheTokenizer) {
  // 320 logits per position, 300 tokens. Every logit is 0 but padding row 310's, which is
  // L = 32 / sqrt(1 + eps) (an all-ones hidden state through an all-ones row), so each target's
  // NLL is log(319 + e^L). Rows read 300 apart (the tokenizer's size) miss the winner.
  testing::TestModelOptions model;
  model.vocab = 320;
  model.tokenizer_vocab = 300;
  model.winner = 310;
  const std::string path = ::testing::TempDir() + "kite_ppl_padded.gguf";
  ASSERT_TRUE(testing::WriteTestModel(path, model).has_value());
  auto engine = LoadTestModel(path);
  ASSERT_TRUE(engine);
  auto result = ComputePerplexity(*engine, kText, ScoringOptions{.ctx = 16});
  ASSERT_TRUE(result.has_value()) << result.error().message;
  ASSERT_GT(result->tokens, 16);  // more than one window
  const double logit = 32.0 / std::sqrt(1.0 + 1e-5);
  EXPECT_NEAR(result->nll / result->tokens, std::log(319.0 + std::exp(logit)), 1e-3);
}

TEST(PerplexityTest, NonFiniteLogitsAreAnErrorNotPerplexityNan) {
  const std::string path = ::testing::TempDir() + "kite_ppl_nan.gguf";
  ASSERT_TRUE(testing::WriteTestModel(path, testing::TestModelOptions{}).has_value());
  ASSERT_TRUE(testing::SetTestModelValue(path, "blk.0.attn_v.weight", 0,
                                         std::numeric_limits<float>::quiet_NaN())
                  .has_value());
  auto engine = LoadTestModel(path);
  ASSERT_TRUE(engine);
  auto result = ComputePerplexity(*engine, kText, ScoringOptions{.ctx = 16});
  ASSERT_FALSE(result.has_value()) << "ppl " << result->ppl;
  EXPECT_EQ(result.error().code, ErrorCode::kInvalidInput);
  EXPECT_TRUE(Contains(result.error().message, "of the text (window 1, position 0) are not finite"))
      << result.error().message;
  EXPECT_TRUE(Contains(result.error().message, "--check-tensors")) << result.error().message;
}

}  // namespace
}  // namespace kite
