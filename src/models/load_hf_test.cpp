#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/mapped_file.h"
#include "models/hf_test_folder.h"
#include "models/load_model.h"

namespace kite {
namespace {

using testing::BrokenFolder;
using testing::kReference;

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(LoadHfTest, LlamaWithGroupedQueryAttention) {
  auto model = LoadHfModel(kReference + "llama-gqa");
  ASSERT_TRUE(model.has_value()) << model.error().message;
  const ModelConfig* spec = &(*model)->config();
  // From the folder's config.json and README.
  EXPECT_EQ(spec->architecture, "LlamaForCausalLM");
  EXPECT_EQ(spec->n_layers, 2);
  EXPECT_EQ(spec->hidden, 64);
  EXPECT_EQ(spec->n_heads, 4);
  EXPECT_EQ(spec->n_kv_heads, 2);
  EXPECT_EQ(spec->head_dim, 16);
  EXPECT_EQ(spec->ffn, 160);
  EXPECT_EQ(spec->vocab, 1000);
  EXPECT_EQ(spec->context_length, 128);
  EXPECT_EQ(spec->rope.mode, RopeMode::kNeox);
  EXPECT_EQ(spec->rope.rotary_dim, 16);
  EXPECT_FALSE(spec->tied_embeddings);
  EXPECT_EQ((*model)->weights().weights().size(), 1u + 2 * 9 + 2);
  auto lm_head = (*model)->Weight("output.weight");
  ASSERT_TRUE(lm_head.has_value());
  EXPECT_EQ((*lm_head)->shape, (std::vector<int64_t>{1000, 64}));
  // F32: 2 x 1000x64 tables, the final norm, and per layer two norms, q/o 64x64, k/v 32x64
  // and three 160x64 MLP matrices.
  EXPECT_EQ((*model)->weights().Bytes(), (2u * 64000 + 64 + 2 * (128 + 8192 + 4096 + 30720)) * 4);
}

TEST(LoadHfTest, Qwen2HasQkvBiasesAndTiedEmbeddings) {
  auto model = LoadHfModel(kReference + "qwen2-bias");
  ASSERT_TRUE(model.has_value()) << model.error().message;
  const ModelConfig* spec = &(*model)->config();
  EXPECT_TRUE(spec->q_bias && spec->k_bias && spec->v_bias);
  EXPECT_FALSE(spec->o_bias || spec->mlp_bias);
  EXPECT_TRUE(spec->tied_embeddings);
  EXPECT_FLOAT_EQ(spec->rope.theta, 1e6f);
  EXPECT_FLOAT_EQ(spec->rms_eps, 1e-6f);
  EXPECT_EQ(spec->sliding_window, 0);  // use_sliding_window is false
  EXPECT_EQ((*(*model)->Weight("blk.1.attn_q.bias"))->dtype, DType::kF16);
}

TEST(LoadHfTest, RopeScalingAndAllBiases) {
  auto llama3_model = LoadHfModel(kReference + "llama3-rope");
  ASSERT_TRUE(llama3_model.has_value()) << llama3_model.error().message;
  const ModelConfig* llama3 = &(*llama3_model)->config();
  EXPECT_EQ(llama3->rope.scaling, RopeScaling::kLlama3);
  EXPECT_FLOAT_EQ(llama3->rope.factor, 8.0f);
  EXPECT_FLOAT_EQ(llama3->rope.low_freq_factor, 1.0f);
  EXPECT_FLOAT_EQ(llama3->rope.high_freq_factor, 4.0f);
  EXPECT_EQ(llama3->rope.original_max_position, 32);

  auto linear_model = LoadHfModel(kReference + "llama-bias-linear");
  ASSERT_TRUE(linear_model.has_value()) << linear_model.error().message;
  const ModelConfig* linear = &(*linear_model)->config();
  EXPECT_EQ(linear->rope.scaling, RopeScaling::kLinear);
  EXPECT_FLOAT_EQ(linear->rope.factor, 4.0f);
  EXPECT_TRUE(linear->q_bias && linear->o_bias && linear->mlp_bias);
  EXPECT_TRUE((*linear_model)->Weight("blk.0.ffn_down.bias").has_value());

  auto mistral_model = LoadHfModel(kReference + "mistral");
  ASSERT_TRUE(mistral_model.has_value()) << mistral_model.error().message;
  const ModelConfig* mistral = &(*mistral_model)->config();
  EXPECT_EQ(mistral->n_layers, 3);
  EXPECT_EQ(mistral->n_kv_heads, 1);
  EXPECT_EQ(mistral->sliding_window, 4096);
}

TEST(LoadHfTest, UnsupportedArchitectureNamesTheSupportedOnes) {
  BrokenFolder folder("llama-gqa", "arch");
  folder.EditConfig([](nlohmann::json& c) { c["architectures"] = {"GPTNeoXForCausalLM"}; });
  folder.WriteTensors([](auto&, auto&, auto&) { return true; });
  auto spec = LoadHfModel(folder.path());
  ASSERT_FALSE(spec.has_value());
  EXPECT_EQ(spec.error().code, ErrorCode::kUnsupported);
  EXPECT_TRUE(Contains(spec.error().message, "GPTNeoXForCausalLM")) << spec.error().message;
  EXPECT_TRUE(Contains(spec.error().message, "LlamaForCausalLM")) << spec.error().message;
}

TEST(LoadHfTest, MissingTensorIsNamedAsTheFileSpellsIt) {
  BrokenFolder folder("llama-gqa", "missing");
  folder.WriteTensors([](std::string& name, auto&, auto&) {
    return name != "model.layers.1.mlp.gate_proj.weight";
  });
  auto spec = LoadHfModel(folder.path());
  ASSERT_FALSE(spec.has_value());
  EXPECT_EQ(spec.error().code, ErrorCode::kNotFound);
  EXPECT_TRUE(Contains(spec.error().message,
                       "'model.layers.1.mlp.gate_proj.weight', expected shape [160, 64]"))
      << spec.error().message;
}

TEST(LoadHfTest, UntiedModelWithoutLmHeadIsRefused) {
  BrokenFolder folder("llama-gqa", "no_lm_head");
  folder.WriteTensors([](std::string& name, auto&, auto&) { return name != "lm_head.weight"; });
  auto spec = LoadHfModel(folder.path());
  ASSERT_FALSE(spec.has_value());
  EXPECT_TRUE(Contains(spec.error().message, "'lm_head.weight'")) << spec.error().message;
}

TEST(LoadHfTest, WrongShapeGivesExpectedAndFound) {
  BrokenFolder folder("llama-gqa", "shape");
  // k_proj as [16, 128] instead of [32, 64]: same bytes, wrong shape.
  folder.WriteTensors([](std::string& name, nlohmann::json& shape, auto&) {
    if (name == "model.layers.0.self_attn.k_proj.weight") shape = {16, 128};
    return true;
  });
  auto spec = LoadHfModel(folder.path());
  ASSERT_FALSE(spec.has_value());
  EXPECT_EQ(spec.error().code, ErrorCode::kInvalidInput);
  EXPECT_TRUE(Contains(spec.error().message,
                       "'model.layers.0.self_attn.k_proj.weight' has shape [16, 128], "
                       "expected [32, 64]"))
      << spec.error().message;
}

TEST(LoadHfTest, FewerLayersThanTheWeightsIsRefusedNamingTheUnusedTensors) {
  BrokenFolder folder("llama-gqa", "one_layer");
  folder.EditConfig([](nlohmann::json& c) { c["num_hidden_layers"] = 1; });
  folder.WriteTensors([](auto&, auto&, auto&) { return true; });
  auto spec = LoadHfModel(folder.path());
  ASSERT_FALSE(spec.has_value());
  EXPECT_EQ(spec.error().code, ErrorCode::kInvalidInput);
  const std::string& message = spec.error().message;
  // Sorted by name, as the safetensors reader lists them.
  EXPECT_TRUE(Contains(message,
                       "9 tensors are not used: model.layers.1.input_layernorm.weight, "
                       "model.layers.1.mlp.down_proj.weight"))
      << message;
  EXPECT_TRUE(Contains(message, "the weights hold 2 layers but config.json num_hidden_layers is 1"))
      << message;
}

TEST(LoadHfTest, ATensorNoLayerUsesIsRefused) {
  BrokenFolder folder("llama-gqa", "stray");
  folder.WriteTensors([](auto&, auto&, auto&) { return true; },
                      {"model.layers.0.self_attn.q_norm.weight"});
  auto spec = LoadHfModel(folder.path());
  ASSERT_FALSE(spec.has_value());
  EXPECT_TRUE(Contains(spec.error().message,
                       "1 tensor is not used: model.layers.0.self_attn.q_norm.weight;"))
      << spec.error().message;
}

TEST(LoadHfTest, TensorsTransformersIgnoresAreAccepted) {
  // RoPE's saved inverse frequencies, and lm_head.weight beside tie_word_embeddings.
  BrokenFolder folder("llama-gqa", "ignorable");
  folder.EditConfig([](nlohmann::json& c) { c["tie_word_embeddings"] = true; });
  folder.WriteTensors([](auto&, auto&, auto&) { return true; },
                      {"model.layers.0.self_attn.rotary_emb.inv_freq",
                       "model.layers.1.self_attn.rotary_emb.inv_freq"});
  auto model = LoadHfModel(folder.path());
  ASSERT_TRUE(model.has_value()) << model.error().message;
  const ModelConfig* spec = &(*model)->config();
  EXPECT_TRUE(spec->tied_embeddings);
  EXPECT_FALSE((*model)->Weight("output.weight").has_value());
}

}  // namespace
}  // namespace kite
