// What Kite makes of a parsed config.json per architecture (moved here from
// format/hf_config_test.cpp with the architecture rules): the bias keys, the sliding window and
// the architectures it builds.
#include "models/hf_architectures.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace kite
