#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "models/load_model.h"
#include "models/test_model.h"

namespace kite {
namespace {

using testing::TestModelOptions;
using testing::WriteTestModel;

std::string Write(const TestModelOptions& options, const std::string& name) {
  const std::string path = ::testing::TempDir() + "kite_load_gguf_" + name + ".gguf";
  const Status written = WriteTestModel(path, options);
  EXPECT_TRUE(written.has_value()) << written.error().message;
  return path;
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A copy of the GGUF at `path` with `key` set to `value`.
std::string WithKey(const std::string& path, const std::string& key, uint32_t value) {
  auto copy = testing::CopyWithKey(path, key, value, "." + key + ".gguf");
  EXPECT_TRUE(copy.has_value()) << copy.error().message;
  return copy.value_or(path);
}

TEST(LoadGgufTest, ReadsHyperParametersAndWeights) {
  TestModelOptions options;  // 2 layers, hidden 32, 4 heads (2 kv) of 8, ffn 48, vocab 300
  auto model = LoadGgufModel(Write(options, "llama"));
  ASSERT_TRUE(model.has_value()) << model.error().message;
  const ModelConfig* spec = &(*model)->config();
  EXPECT_EQ(spec->architecture, "llama");
  EXPECT_EQ(spec->n_layers, 2);
  EXPECT_EQ(spec->hidden, 32);
  EXPECT_EQ(spec->n_heads, 4);
  EXPECT_EQ(spec->n_kv_heads, 2);
  EXPECT_EQ(spec->head_dim, 8);
  EXPECT_EQ(spec->ffn, 48);
  EXPECT_EQ(spec->vocab, 300);
  EXPECT_EQ(spec->context_length, 256);
  EXPECT_FLOAT_EQ(spec->rms_eps, 1e-5f);
  // llama.cpp's converter permuted llama's q/k rows: interleaved pairs.
  EXPECT_EQ(spec->rope.mode, RopeMode::kInterleaved);
  EXPECT_EQ(spec->rope.rotary_dim, 8);
  EXPECT_EQ(spec->rope.scaling, RopeScaling::kNone);
  EXPECT_FALSE(spec->tied_embeddings);
  EXPECT_FALSE(spec->q_bias);
  // embedding, 9 per layer, output norm, lm_head
  EXPECT_EQ((*model)->weights().weights().size(), 1u + 2 * 9 + 2);
  auto wk = (*model)->Weight("blk.1.attn_k.weight");
  ASSERT_TRUE(wk.has_value());
  EXPECT_EQ((*wk)->shape, (std::vector<int64_t>{16, 32}));
  EXPECT_EQ((*wk)->dtype, DType::kF32);
  // All F32: (300*32*2 + 32 + 2*(2*32 + 32*32*2 + 16*32*2 + 3*48*32)) * 4 bytes.
  EXPECT_EQ((*model)->weights().Bytes(), (300u * 32 * 2 + 32 + 2 * (64 + 2048 + 1024 + 4608)) * 4);
}

TEST(LoadGgufTest, Qwen2KeepsNeoxRopeAndFindsBiasesAndTiedEmbeddings) {
  TestModelOptions options;
  options.arch = "qwen2";
  options.qkv_bias = true;
  options.tied = true;
  auto model = LoadGgufModel(Write(options, "qwen2"));
  ASSERT_TRUE(model.has_value()) << model.error().message;
  const ModelConfig* spec = &(*model)->config();
  EXPECT_EQ(spec->rope.mode, RopeMode::kNeox);
  EXPECT_TRUE(spec->q_bias && spec->k_bias && spec->v_bias);
  EXPECT_FALSE(spec->o_bias || spec->mlp_bias);
  EXPECT_TRUE(spec->tied_embeddings);
  EXPECT_FALSE((*model)->Weight("output.weight").has_value());
  EXPECT_TRUE((*model)->Weight("blk.0.attn_v.bias").has_value());
}

TEST(LoadGgufTest, RopeFreqsBecomeTheRopesDivisors) {
  TestModelOptions options;  // head_dim 8, theta 1e4: wavelengths 6.3, 63, 628, 6283
  options.rope_freqs = {1.0f, 1.0f / (0.5f / 4.0f + 0.5f), 4.0f, 4.0f};
  auto model = LoadGgufModel(Write(options, "rope_freqs"));
  ASSERT_TRUE(model.has_value()) << model.error().message;
  const ModelConfig* spec = &(*model)->config();
  EXPECT_EQ(spec->rope.scaling, RopeScaling::kDivisors);
  EXPECT_EQ(spec->rope.divisors, options.rope_freqs);
  // And the graph's rope nodes carry them.
  auto graph = (*model)->BuildGraph({.tokens = 1});
  ASSERT_TRUE(graph.has_value()) << graph.error().message;
  for (const Node& node : graph->nodes()) {
    if (node.op() == OpKind::kRope) {
      EXPECT_EQ(node.as<RopeAttrs>().divisors, options.rope_freqs);
    }
  }
}

TEST(LoadGgufTest, RopeFreqsOfTheWrongSizeOrValueAreRefused) {
  TestModelOptions options;  // head_dim 8: 4 rotary pairs
  options.rope_freqs = {1.0f, 1.0f, 1.0f};
  auto model = LoadGgufModel(Write(options, "rope_freqs_3"));
  ASSERT_FALSE(model.has_value());
  EXPECT_TRUE(Contains(model.error().message,
                       "'rope_freqs.weight' has 3 entries, expected one per rotary pair (4)"))
      << model.error().message;
  for (float bad : {0.0f, -1.0f, NAN, INFINITY}) {
    options.rope_freqs = {1.0f, bad, 1.0f, 1.0f};
    model = LoadGgufModel(Write(options, "rope_freqs_bad"));
    ASSERT_FALSE(model.has_value()) << bad;
    EXPECT_TRUE(Contains(model.error().message, "'rope_freqs.weight'[1] is"))
        << model.error().message;
  }
}

TEST(LoadGgufTest, UnsupportedArchitectureNamesTheSupportedOnes) {
  TestModelOptions options;
  options.arch = "gpt2";
  auto spec = LoadGgufModel(Write(options, "gpt2"));
  ASSERT_FALSE(spec.has_value());
  EXPECT_EQ(spec.error().code, ErrorCode::kUnsupported);
  EXPECT_TRUE(Contains(spec.error().message, "'gpt2'")) << spec.error().message;
  EXPECT_TRUE(Contains(spec.error().message, "llama, qwen2")) << spec.error().message;
}

TEST(LoadGgufTest, MissingTensorIsNamed) {
  TestModelOptions options;
  options.skip = {"blk.1.ffn_up.weight"};
  auto spec = LoadGgufModel(Write(options, "missing"));
  ASSERT_FALSE(spec.has_value());
  EXPECT_EQ(spec.error().code, ErrorCode::kNotFound);
  EXPECT_TRUE(Contains(spec.error().message, "'blk.1.ffn_up.weight', expected shape [48, 32]"))
      << spec.error().message;
}

TEST(LoadGgufTest, WrongShapeGivesBothShapes) {
  TestModelOptions options;
  options.n_kv_heads = 4;  // k and v written [32, 32] ...
  // ... while the header says 2 kv heads: rewrite only that key.
  auto spec = LoadGgufModel(
      WithKey(Write(options, "wrong_shape"), "llama.attention.head_count_kv", 2));
  ASSERT_FALSE(spec.has_value());
  EXPECT_EQ(spec.error().code, ErrorCode::kInvalidInput);
  EXPECT_TRUE(
      Contains(spec.error().message, "'blk.0.attn_k.weight' has shape [32, 32], expected [16, 32]"))
      << spec.error().message;
}

// llama.cpp refuses such a file ("wrong number of tensors"); Kite used to run the first layers.
TEST(LoadGgufTest, FewerLayersThanTheWeightsIsRefusedNamingTheUnusedTensors) {
  TestModelOptions options;
  options.n_layers = 3;  // 9 tensors per layer
  auto spec = LoadGgufModel(WithKey(Write(options, "three_layers"), "llama.block_count", 1));
  ASSERT_FALSE(spec.has_value());
  EXPECT_EQ(spec.error().code, ErrorCode::kInvalidInput);
  const std::string& message = spec.error().message;
  EXPECT_TRUE(Contains(message, "18 tensors are not used: blk.1.attn_norm.weight, ")) << message;
  EXPECT_TRUE(Contains(message, "blk.2.attn_norm.weight and 8 more")) << message;  // ten listed
  EXPECT_TRUE(Contains(message, "the weights hold 3 layers but key 'llama.block_count' is 1"))
      << message;
}

TEST(LoadGgufTest, APartThatBlockZeroLacksIsRefused) {
  TestModelOptions options;
  options.qkv_bias = true;
  options.skip = {"blk.0.attn_q.bias", "blk.0.attn_k.bias", "blk.0.attn_v.bias"};
  auto spec = LoadGgufModel(Write(options, "bias_in_block_1"));
  ASSERT_FALSE(spec.has_value());
  const std::string& message = spec.error().message;
  EXPECT_TRUE(Contains(message,
                       "3 tensors are not used: blk.1.attn_q.bias, blk.1.attn_k.bias, "
                       "blk.1.attn_v.bias;"))
      << message;
  EXPECT_TRUE(Contains(message, "block 0 included")) << message;
}

TEST(LoadModelTest, PicksTheLoaderByPath) {
  auto missing = LoadModel(::testing::TempDir() + "no_such_model.gguf");
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);
  auto gguf_model = LoadModel(Write(TestModelOptions{}, "by_path"));
  ASSERT_TRUE(gguf_model.has_value()) << gguf_model.error().message;
  const ModelConfig* gguf = &(*gguf_model)->config();
  EXPECT_EQ(gguf->architecture, "llama");
}

}  // namespace
}  // namespace kite
