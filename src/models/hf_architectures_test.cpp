// What Kite makes of a parsed config.json per architecture (moved here from
// format/hf_config_test.cpp with the architecture rules): the bias keys, the sliding window and
// the architectures it builds; the own keys of Qwen3, Gemma 2, Gemma 3 and Phi-4-mini (their
// published config.json fields, abbreviated to those Kite reads).
#include "models/hf_architectures.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "format/hf_config_test_data.h"

namespace kite {
namespace {

using testing::kLlama32_1B;
using testing::kMistral7B;
using testing::kQwen25_05B;
using testing::kTinyLlama;
using testing::ParseOk;
using testing::Variant;

constexpr std::string_view kQwen3_06B = R"({
  "architectures": ["Qwen3ForCausalLM"], "attention_bias": false, "head_dim": 128,
  "hidden_act": "silu", "hidden_size": 1024, "intermediate_size": 3072,
  "max_position_embeddings": 40960, "max_window_layers": 28, "num_attention_heads": 16,
  "num_hidden_layers": 28, "num_key_value_heads": 8, "rms_norm_eps": 1e-06,
  "rope_scaling": null, "rope_theta": 1000000, "sliding_window": null,
  "tie_word_embeddings": true, "use_sliding_window": false, "vocab_size": 151936,
  "bos_token_id": 151643, "eos_token_id": 151645})";

constexpr std::string_view kGemma3_1B = R"({
  "architectures": ["Gemma3ForCausalLM"], "attention_bias": false,
  "attn_logit_softcapping": null, "final_logit_softcapping": null, "head_dim": 256,
  "hidden_activation": "gelu_pytorch_tanh", "hidden_size": 1152, "intermediate_size": 6912,
  "max_position_embeddings": 32768, "num_attention_heads": 4, "num_hidden_layers": 26,
  "num_key_value_heads": 1, "query_pre_attn_scalar": 256, "rms_norm_eps": 1e-06,
  "rope_local_base_freq": 10000, "rope_scaling": null, "rope_theta": 1000000,
  "sliding_window": 512, "sliding_window_pattern": 6, "vocab_size": 262144,
  "bos_token_id": 2, "eos_token_id": [1, 106]})";

constexpr std::string_view kGemma2_2B = R"({
  "architectures": ["Gemma2ForCausalLM"], "attention_bias": false,
  "attn_logit_softcapping": 50.0, "final_logit_softcapping": 30.0, "head_dim": 256,
  "hidden_act": "gelu_pytorch_tanh", "hidden_activation": "gelu_pytorch_tanh",
  "hidden_size": 2304, "intermediate_size": 9216, "max_position_embeddings": 8192,
  "num_attention_heads": 8, "num_hidden_layers": 26, "num_key_value_heads": 4,
  "query_pre_attn_scalar": 256, "rms_norm_eps": 1e-06, "rope_theta": 10000.0,
  "sliding_window": 4096, "vocab_size": 256000})";

std::string Phi4Mini() {
  std::string shortf, longf;
  for (int i = 0; i < 48; ++i) {
    shortf += (i ? ", " : "") + std::to_string(1.0 + i / 100.0);
    longf += (i ? ", " : "") + std::to_string(1.0 + i);
  }
  return R"({"architectures": ["Phi3ForCausalLM"], "hidden_act": "silu", "hidden_size": 3072,
    "intermediate_size": 8192, "max_position_embeddings": 131072, "num_attention_heads": 24,
    "num_hidden_layers": 32, "num_key_value_heads": 8, "original_max_position_embeddings": 4096,
    "partial_rotary_factor": 0.75, "rms_norm_eps": 1e-05, "rope_theta": 10000.0,
    "rope_scaling": {"type": "longrope", "short_factor": [)" +
         shortf + R"(], "long_factor": [)" + longf + R"(]},
    "sliding_window": 262144, "tie_word_embeddings": true, "vocab_size": 200064})";
}

ModelConfig MapOk(const std::string& text) {
  auto config = ModelConfigFromHf(ParseOk(text));
  if (!config) {
    ADD_FAILURE() << config.error().message;
    return ModelConfig{};
  }
  return std::move(*config);
}

void ExpectUnsupported(const std::string& text, std::initializer_list<std::string> fragments) {
  auto config = ModelConfigFromHf(ParseOk(text));
  ASSERT_FALSE(config.has_value());
  EXPECT_EQ(config.error().code, ErrorCode::kUnsupported);
  EXPECT_NE(config.error().message.find("m/config.json"), std::string::npos)
      << config.error().message;
  for (const std::string& fragment : fragments) {
    EXPECT_NE(config.error().message.find(fragment), std::string::npos) << config.error().message;
  }
}

TEST(HfArchitecturesTest, Llama32_1B) {
  const ModelConfig c = MapOk(std::string(kLlama32_1B));
  EXPECT_EQ(c.family, "llama");
  EXPECT_EQ(c.architecture, "LlamaForCausalLM");
  EXPECT_FALSE(c.q_bias || c.k_bias || c.v_bias);
  EXPECT_FALSE(c.o_bias);
  EXPECT_FALSE(c.mlp_bias);
  EXPECT_EQ(c.sliding_window, 0);
  EXPECT_EQ(c.rope.mode, RopeMode::kNeox);
  EXPECT_EQ(c.rope.scaling, RopeScaling::kLlama3);
  EXPECT_EQ(c.rope.original_max_position, 8192);
  EXPECT_EQ(c.eos_ids, std::vector<int32_t>{128001});
}

TEST(HfArchitecturesTest, Mistral7B) {
  const ModelConfig c = MapOk(std::string(kMistral7B));
  EXPECT_EQ(c.sliding_window, 4096);
  EXPECT_FALSE(c.q_bias);
  EXPECT_EQ(MapOk(Variant(kMistral7B, {{"sliding_window", nullptr}})).sliding_window, 0);
}

TEST(HfArchitecturesTest, Qwen25_05B) {
  const ModelConfig c = MapOk(std::string(kQwen25_05B));
  EXPECT_TRUE(c.q_bias && c.k_bias && c.v_bias);  // q, k, v
  EXPECT_FALSE(c.o_bias);
  EXPECT_FALSE(c.mlp_bias);
  EXPECT_EQ(c.sliding_window, 0);  // use_sliding_window is false
}

TEST(HfArchitecturesTest, DefaultsForAbsentBiasKeys) {
  const ModelConfig c = MapOk(Variant(kTinyLlama, {{"attention_bias", nullptr}}));
  EXPECT_FALSE(c.q_bias || c.o_bias || c.mlp_bias);
}

TEST(HfArchitecturesTest, LlamaBiasKeys) {
  const ModelConfig c = MapOk(Variant(kTinyLlama, {{"attention_bias", true}, {"mlp_bias", true}}));
  EXPECT_TRUE(c.q_bias && c.k_bias && c.v_bias);
  EXPECT_TRUE(c.o_bias);
  EXPECT_TRUE(c.mlp_bias);
  // Mistral has no bias keys; a stray one changes nothing.
  EXPECT_FALSE(MapOk(Variant(kMistral7B, {{"attention_bias", true}})).q_bias);
}

TEST(HfArchitecturesTest, RefusesWhatKiteDoesNotBuild) {
  ExpectUnsupported(
      Variant(kTinyLlama, {{"architectures", {"GemmaForCausalLM"}}}),
      {"'GemmaForCausalLM'", "LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM"});
  ExpectUnsupported(Variant(kQwen25_05B, {{"use_sliding_window", true}}),
                    {"use_sliding_window", "Qwen2ForCausalLM"});
  ExpectUnsupported(Variant(kTinyLlama, {{"hidden_act", "gelu"}}), {"hidden_act 'gelu'"});
}

TEST(HfArchitecturesTest, AnotherArchitectureIsNamedBeforeItsFieldsAreRead) {
  // GPT-2 names its sizes n_embd, n_layer, ...: "missing field 'vocab_size'" would mislead.
  auto config = ParseHfConfig(R"({"architectures": ["GPT2LMHeadModel"], "n_embd": 64})",
                              "m/config.json", CheckHfArchitecture);
  ASSERT_FALSE(config.has_value());
  EXPECT_EQ(config.error().code, ErrorCode::kUnsupported);
  EXPECT_NE(config.error().message.find("m/config.json: architecture 'GPT2LMHeadModel'"),
            std::string::npos)
      << config.error().message;
}

TEST(HfArchitecturesTest, Qwen3) {
  const ModelConfig c = MapOk(std::string(kQwen3_06B));
  EXPECT_EQ(c.family, "qwen3");
  EXPECT_TRUE(c.qk_norm);
  EXPECT_EQ(c.head_dim, 128);  // not hidden / heads (64)
  EXPECT_FALSE(c.q_bias || c.o_bias);
  EXPECT_EQ(c.sliding_window, 0);
}

TEST(HfArchitecturesTest, Gemma3) {
  const ModelConfig c = MapOk(std::string(kGemma3_1B));
  EXPECT_EQ(c.family, "gemma");
  EXPECT_TRUE(c.qk_norm);
  EXPECT_FLOAT_EQ(c.embedding_scale, std::sqrt(1152.0f));
  EXPECT_FLOAT_EQ(c.attention_scale, 1.0f / 16.0f);
  EXPECT_EQ(c.attn_softcap, 0.0f);
  EXPECT_EQ(c.final_softcap, 0.0f);
  EXPECT_EQ(c.sliding_window, 512);
  // Layers 5, 11, 17, 23 are global (rope_theta), the rest slide (base 10000).
  for (int32_t layer = 0; layer < 26; ++layer) {
    const bool global = (layer + 1) % 6 == 0;
    EXPECT_EQ(c.IsSlidingLayer(layer), !global) << layer;
    EXPECT_EQ(c.RopeOf(layer, 4096).theta, global ? 1e6f : 1e4f) << layer;
  }
  // Newer configs spell the pattern as layer_types; an irregular one is refused by index.
  nlohmann::json types = nlohmann::json::array();
  for (int i = 0; i < 26; ++i)
    types.push_back((i + 1) % 3 == 0 ? "full_attention" : "sliding_attention");
  EXPECT_EQ(MapOk(Variant(kGemma3_1B, {{"layer_types", types}})).sliding_window_pattern, 3);
  types[7] = "full_attention";
  auto irregular = ModelConfigFromHf(ParseOk(Variant(kGemma3_1B, {{"layer_types", types}})));
  ASSERT_FALSE(irregular.has_value());
  EXPECT_NE(irregular.error().message.find("layer_types[7]"), std::string::npos)
      << irregular.error().message;
}

TEST(HfArchitecturesTest, Gemma2) {
  const ModelConfig c = MapOk(std::string(kGemma2_2B));
  EXPECT_FALSE(c.qk_norm);
  EXPECT_EQ(c.attn_softcap, 50.0f);
  EXPECT_EQ(c.final_softcap, 30.0f);
  EXPECT_TRUE(c.IsSlidingLayer(0));
  EXPECT_FALSE(c.IsSlidingLayer(1));
  EXPECT_FALSE(c.rope_sliding.has_value());
  auto silu = ModelConfigFromHf(ParseOk(Variant(kGemma2_2B, {{"hidden_activation", "silu"}})));
  ASSERT_FALSE(silu.has_value());
  EXPECT_NE(silu.error().message.find("gelu_pytorch_tanh"), std::string::npos);
}

TEST(HfArchitecturesTest, Phi4MiniLongRope) {
  const ModelConfig c = MapOk(Phi4Mini());
  EXPECT_EQ(c.family, "phi3");
  EXPECT_EQ(c.head_dim, 128);
  EXPECT_EQ(c.rope.rotary_dim, 96);
  EXPECT_EQ(c.rope.scaling, RopeScaling::kDivisors);
  ASSERT_EQ(c.rope.divisors.size(), 48u);
  ASSERT_EQ(c.rope_long_factors.size(), 48u);
  EXPECT_EQ(c.rope.original_max_position, 4096);
  // √(1 + ln(131072 / 4096) / ln 4096), as transformers computes it.
  EXPECT_NEAR(c.rope.attention_factor, std::sqrt(1 + std::log(32.0) / std::log(4096.0)), 1e-6);
  EXPECT_FLOAT_EQ(c.RopeOf(0, 4096).divisors[47], 1.47f);  // short inside the original context
  EXPECT_FLOAT_EQ(c.RopeOf(0, 8192).divisors[47], 48.0f);  // long past it
  // Factors that do not match the rotary pairs are refused by name.
  auto wrong = ModelConfigFromHf(ParseOk(Variant(Phi4Mini(), {{"partial_rotary_factor", 0.5}})));
  ASSERT_FALSE(wrong.has_value());
  EXPECT_NE(wrong.error().message.find("short_factor"), std::string::npos) << wrong.error().message;
}

}  // namespace
}  // namespace kite
