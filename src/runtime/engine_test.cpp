#include "runtime/engine.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>

#include "models/test_model.h"

namespace kite {
namespace {

const std::string kReference = KITE_SOURCE_DIR "/testdata/reference/";

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(EngineTest, DefaultContextIsTheModelsCappedAt4096) {
  auto engine = Engine::Load(kReference + "llama-gqa", EngineOptions{});
  ASSERT_TRUE(engine.has_value()) << engine.error().message;
  EXPECT_EQ((*engine)->context_length(), 128);  // max_position_embeddings
  // 2 layers x (k + v) x 2 kv heads x 16 dims x 2 bytes (f16) per position, 128 positions.
  EXPECT_EQ((*engine)->KvCacheBytes(), 2u * 2 * 2 * 16 * 2 * 128);
  // llama-gqa is all F32: 2 x 1000x64 tables, final norm, per layer 2 norms, q/o 64x64,
  // k/v 32x64, three 160x64 MLP matrices.
  EXPECT_EQ((*engine)->WeightBytes(), (2u * 64000 + 64 + 2 * (128 + 8192 + 4096 + 30720)) * 4);

  const std::string path = ::testing::TempDir() + "kite_engine_long_context.gguf";
  testing::TestModelOptions options;
  options.context_length = 131072;
  ASSERT_TRUE(testing::WriteTestModel(path, options).has_value());
  auto capped = Engine::Load(path, EngineOptions{});
  ASSERT_TRUE(capped.has_value()) << capped.error().message;
  EXPECT_EQ((*capped)->context_length(), 4096);
}

TEST(EngineTest, KvCacheIsSizedInWholePages) {
  EngineOptions options;
  options.context_length = 100;
  options.kv_page_size = 64;  // 2 pages per layer hold 128 positions
  options.kv_dtype = DType::kF32;
  auto engine = Engine::Load(kReference + "llama-gqa", options);
  ASSERT_TRUE(engine.has_value()) << engine.error().message;
  EXPECT_EQ((*engine)->context_length(), 100);
  EXPECT_EQ((*engine)->KvCacheBytes(), 2u * 2 * 2 * 16 * 4 * 128);
}

// q8_0 stores 34 bytes per 32 elements: 2 layers x (k + v) x 2 kv heads x one block of 32.
TEST(EngineTest, Q8_0KvCacheBytesAreWholeBlocks) {
  const std::string path = ::testing::TempDir() + "kite_engine_head32.gguf";
  testing::TestModelOptions model;
  model.head_dim = 32;
  model.n_heads = 2;
  model.n_kv_heads = 2;
  model.hidden = 64;
  ASSERT_TRUE(testing::WriteTestModel(path, model).has_value());
  EngineOptions options;
  options.context_length = 100;
  options.kv_page_size = 64;  // 128 positions
  options.kv_dtype = DType::kQ8_0;
  auto engine = Engine::Load(path, options);
  ASSERT_TRUE(engine.has_value()) << engine.error().message;
  EXPECT_EQ((*engine)->KvBytesPerToken(), 2u * 2 * 2 * 34);
  EXPECT_EQ((*engine)->KvCacheBytes(), 2u * 2 * 2 * 34 * 128);
  options.kv_dtype = DType::kF16;
  auto f16 = Engine::Load(path, options);
  ASSERT_TRUE(f16.has_value()) << f16.error().message;
  EXPECT_EQ((*f16)->KvBytesPerToken(), 2u * 2 * 2 * 32 * 2);
}

// The reference models have heads of 16: not whole q8_0 blocks.
TEST(EngineTest, Q8_0KvCacheNeedsHeadDimAMultipleOf32) {
  EngineOptions options;
  options.kv_dtype = DType::kQ8_0;
  auto engine = Engine::Load(kReference + "llama-gqa", options);
  ASSERT_FALSE(engine.has_value());
  EXPECT_EQ(engine.error().code, ErrorCode::kUnsupported);
  EXPECT_TRUE(Contains(engine.error().message,
                       "head_dim 16 is not a multiple of 32, the block size of KV cache type q8_0"))
      << engine.error().message;
}

TEST(EngineTest, ContextTooLargeForMemorySaysHowManyBytes) {
  EngineOptions options;
  options.context_length = 2'000'000'000;  // 2e9 x 256 bytes per position = 512 GB of f16 KV
  auto engine = Engine::Load(kReference + "llama-gqa", options);
  ASSERT_FALSE(engine.has_value());
  EXPECT_EQ(engine.error().code, ErrorCode::kOutOfResources);
  EXPECT_TRUE(Contains(engine.error().message, "2000000000 positions needs 512000000000 bytes"))
      << engine.error().message;
}

TEST(EngineTest, RefusesBadOptions) {
  EngineOptions options;
  options.backend = "npu9000";
  auto engine = Engine::Load(kReference + "llama-gqa", options);
  ASSERT_FALSE(engine.has_value());
  EXPECT_EQ(engine.error().code, ErrorCode::kUnsupported);
  EXPECT_TRUE(Contains(engine.error().message, "'npu9000'")) << engine.error().message;
  EXPECT_TRUE(Contains(engine.error().message, "available: ref")) << engine.error().message;

  options = EngineOptions{};
  options.prefill_chunk = 0;
  EXPECT_FALSE(Engine::Load(kReference + "llama-gqa", options).has_value());
  options = EngineOptions{};
  options.kv_dtype = DType::kQ4_0;
  auto q4 = Engine::Load(kReference + "llama-gqa", options);
  ASSERT_FALSE(q4.has_value());
  EXPECT_TRUE(Contains(q4.error().message, "KV cache type q4_0, expected one of f16, f32, q8_0"))
      << q4.error().message;
  options = EngineOptions{};
  options.context_length = -1;
  EXPECT_FALSE(Engine::Load(kReference + "llama-gqa", options).has_value());
  // Tens of thousands of threads aborted the process (std::system_error out of the pool).
  options = EngineOptions{};
  options.threads = 40000;
  engine = Engine::Load(kReference + "llama-gqa", options);
  ASSERT_FALSE(engine.has_value());
  EXPECT_TRUE(Contains(engine.error().message, "threads 40000")) << engine.error().message;
}

TEST(EngineTest, ContextPastTheSlidingWindowLoads) {
  // Attention keeps to the window (AttentionAttrs::window): a longer context is the model's own.
  EngineOptions options;
  options.context_length = 8192;  // mistral's window is 4096
  auto engine = Engine::Load(kReference + "mistral", options);
  ASSERT_TRUE(engine.has_value()) << engine.error().message;
  EXPECT_EQ((*engine)->context_length(), 8192);
}

TEST(EngineTest, MissingModelAndUnsupportedArchitecture) {
  auto missing = Engine::Load(kReference + "no-such-model", EngineOptions{});
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);

  const std::string path = ::testing::TempDir() + "kite_engine_mamba.gguf";
  testing::TestModelOptions options;
  options.arch = "mamba";  // phi3 became supported
  ASSERT_TRUE(testing::WriteTestModel(path, options).has_value());
  auto unsupported = Engine::Load(path, EngineOptions{});
  ASSERT_FALSE(unsupported.has_value());
  EXPECT_EQ(unsupported.error().code, ErrorCode::kUnsupported);
}

TEST(EngineTest, PlacementReportCoversEachCompiledPhase) {
  auto engine = Engine::Load(kReference + "llama-gqa", EngineOptions{});
  ASSERT_TRUE(engine.has_value()) << engine.error().message;
  std::string report = (*engine)->PlacementReport();
  EXPECT_TRUE(Contains(report, "decode step (1 token)")) << report;
  EXPECT_TRUE(Contains(report, "blk.1.attn_q")) << report;
  EXPECT_TRUE(Contains(report, "cpu")) << report;  // the default backend
  EXPECT_FALSE(Contains(report, "prefill")) << report;  // compiled on first use

  ASSERT_TRUE((*engine)->LeaseGraph(7, false).has_value());
  report = (*engine)->PlacementReport();
  EXPECT_TRUE(Contains(report, "prefill chunk (7 tokens, last logits)")) << report;
  EXPECT_FALSE((*engine)->LeaseGraph(129, false).has_value());  // past the prefill chunk
}

TEST(EngineTest, CompiledGraphsAreCachedPerShape) {
  EngineOptions options;
  options.prefill_chunk = 16;
  auto engine = Engine::Load(kReference + "llama-gqa", options);
  ASSERT_TRUE(engine.has_value()) << engine.error().message;
  auto executable = [&](int32_t tokens, bool all_logits) {
    return &(*engine)->LeaseGraph(tokens, all_logits)->executable();
  };
  const Executable* decode = executable(1, false);
  const Executable* chunk = executable(16, false);
  EXPECT_EQ(executable(1, true), decode);  // one token: all logits = last logits
  for (int32_t t = 2; t < 12; ++t) ASSERT_TRUE((*engine)->LeaseGraph(t, false).has_value());
  EXPECT_EQ(executable(1, false), decode);  // the decode step and full chunks stay
  EXPECT_EQ(executable(16, false), chunk);
  EXPECT_NE(executable(16, true), chunk);
}

// Leases held at once share the compiled graph but never a run state (arena); a returned state
// is lent again rather than allocated anew.
TEST(EngineTest, LeasesOfOneShapeShareTheGraphNotTheArena) {
  auto engine = Engine::Load(kReference + "llama-gqa", EngineOptions{});
  ASSERT_TRUE(engine.has_value()) << engine.error().message;
  auto first = (*engine)->LeaseGraph(1, false);
  auto second = (*engine)->LeaseGraph(1, false);
  ASSERT_TRUE(first.has_value() && second.has_value());
  EXPECT_EQ(&first->executable(), &second->executable());
  EXPECT_NE(&first->state(), &second->state());
  const RunState* returned = &second->state();
  second = (*engine)->LeaseGraph(2, false);  // the decode state goes back
  auto third = (*engine)->LeaseGraph(1, false);
  ASSERT_TRUE(third.has_value());
  EXPECT_EQ(&third->state(), returned);
}

TEST(EngineTest, ContextBeyondTheTrainedOneWarnsWithBothNumbers) {
  EngineOptions options;
  options.context_length = 200;  // llama-gqa was trained on 128 positions
  auto engine = Engine::Load(kReference + "llama-gqa", options);
  ASSERT_TRUE(engine.has_value()) << engine.error().message;
  ASSERT_EQ((*engine)->warnings().size(), 1u);
  EXPECT_TRUE(Contains((*engine)->warnings()[0],
                       "a context of 200 positions is longer than the 128 " + kReference))
      << (*engine)->warnings()[0];

  options.context_length = 128;
  auto trained = Engine::Load(kReference + "llama-gqa", options);
  ASSERT_TRUE(trained.has_value()) << trained.error().message;
  EXPECT_TRUE((*trained)->warnings().empty());
}

TEST(EngineTest, CheckTensorsNamesANanWeight) {
  const std::string path = ::testing::TempDir() + "kite_engine_nan.gguf";
  ASSERT_TRUE(testing::WriteTestModel(path, testing::TestModelOptions{}).has_value());
  ASSERT_TRUE(testing::SetTestModelValue(path, "blk.1.ffn_up.weight", 35,
                                         std::numeric_limits<float>::quiet_NaN())
                  .has_value());
  EngineOptions options;
  EXPECT_TRUE(Engine::Load(path, options).has_value());  // nothing scans by default
  options.check_tensors = true;
  auto engine = Engine::Load(path, options);
  ASSERT_FALSE(engine.has_value());
  EXPECT_EQ(engine.error().code, ErrorCode::kInvalidInput);
  EXPECT_TRUE(Contains(engine.error().message,
                       "tensor 'blk.1.ffn_up.weight' [48, 32] f32 holds nan at element 35 (row 1, "
                       "column 3)"))
      << engine.error().message;
}

}  // namespace
}  // namespace kite
