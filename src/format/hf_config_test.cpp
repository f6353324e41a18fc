// config.json parsing: the published configs of real models, written out here, and broken ones.
#include "format/hf_config.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "format/hf_config_test_data.h"
#include "format/safetensors_test_bytes.h"

namespace kite {
namespace {

using kite::testing::ExpectError;
using kite::testing::kLlama32_1B;
using kite::testing::kMistral7B;
using kite::testing::kQwen25_05B;
using kite::testing::kTinyLlama;
using kite::testing::ParseOk;
using kite::testing::Variant;
using nlohmann::json;

TEST(HfConfigTest, Llama32_1B) {
  const HfConfig c = ParseOk(kLlama32_1B);
  EXPECT_EQ(c.architecture, "LlamaForCausalLM");
  EXPECT_EQ(c.vocab_size, 128256);
  EXPECT_EQ(c.hidden_size, 2048);
  EXPECT_EQ(c.intermediate_size, 8192);
  EXPECT_EQ(c.num_hidden_layers, 16);
  EXPECT_EQ(c.num_attention_heads, 32);
  EXPECT_EQ(c.num_key_value_heads, 8);
  EXPECT_EQ(c.head_dim, 64);
  EXPECT_EQ(c.max_position_embeddings, 131072);
  EXPECT_DOUBLE_EQ(c.rms_norm_eps, 1e-5);
  EXPECT_DOUBLE_EQ(c.rope_theta, 500000.0);
  EXPECT_EQ(c.rope_scaling.type, "llama3");
  EXPECT_EQ(c.rope_scaling.factor, 32.0f);
  EXPECT_EQ(c.rope_scaling.low_freq_factor, 1.0f);
  EXPECT_EQ(c.rope_scaling.high_freq_factor, 4.0f);
  EXPECT_EQ(c.rope_scaling.original_max_position_embeddings, 8192);
  EXPECT_TRUE(c.tie_word_embeddings);
  // As given; what they mean for a LlamaForCausalLM: models/hf_architectures_test.cpp.
  EXPECT_EQ(c.attention_bias, std::optional<bool>(false));
  EXPECT_EQ(c.mlp_bias, std::optional<bool>(false));
  EXPECT_EQ(c.hidden_act, "silu");
  EXPECT_FALSE(c.sliding_window.has_value());
  EXPECT_EQ(c.bos_token_ids, (std::vector<int64_t>{128000}));
  EXPECT_EQ(c.eos_token_ids, (std::vector<int64_t>{128001}));
  EXPECT_EQ(c.torch_dtype, "bfloat16");
}

TEST(HfConfigTest, Llama32_1BInstructListsThreeEosTokens) {
  const HfConfig c = ParseOk(Variant(kLlama32_1B, {{"eos_token_id", {128001, 128008, 128009}}}));
  EXPECT_EQ(c.eos_token_ids, (std::vector<int64_t>{128001, 128008, 128009}));
}

TEST(HfConfigTest, Mistral7B) {
  const HfConfig c = ParseOk(kMistral7B);
  EXPECT_EQ(c.architecture, "MistralForCausalLM");
  EXPECT_EQ(c.vocab_size, 32000);
  EXPECT_EQ(c.hidden_size, 4096);
  EXPECT_EQ(c.intermediate_size, 14336);
  EXPECT_EQ(c.num_hidden_layers, 32);
  EXPECT_EQ(c.num_attention_heads, 32);
  EXPECT_EQ(c.num_key_value_heads, 8);
  EXPECT_EQ(c.head_dim, 128);  // 4096 / 32
  EXPECT_EQ(c.max_position_embeddings, 32768);
  EXPECT_DOUBLE_EQ(c.rope_theta, 10000.0);
  EXPECT_EQ(c.rope_scaling.type, "none");
  EXPECT_EQ(c.sliding_window, std::optional<int64_t>(4096));
  EXPECT_FALSE(c.tie_word_embeddings);
  EXPECT_FALSE(c.attention_bias.has_value());
  EXPECT_EQ(c.bos_token_ids, (std::vector<int64_t>{1}));
  EXPECT_EQ(c.eos_token_ids, (std::vector<int64_t>{2}));
}

TEST(HfConfigTest, MistralWithNullSlidingWindowHasNone) {
  const HfConfig c = ParseOk(Variant(kMistral7B, {{"sliding_window", nullptr}}));
  EXPECT_FALSE(c.sliding_window.has_value());
  std::string with_null(kMistral7B);
  with_null.replace(with_null.find("4096,\n  \"tie"), 4, "null");
  EXPECT_FALSE(ParseOk(with_null).sliding_window.has_value());
}

TEST(HfConfigTest, Qwen25_05B) {
  const HfConfig c = ParseOk(kQwen25_05B);
  EXPECT_EQ(c.architecture, "Qwen2ForCausalLM");
  EXPECT_EQ(c.vocab_size, 151936);
  EXPECT_EQ(c.hidden_size, 896);
  EXPECT_EQ(c.intermediate_size, 4864);
  EXPECT_EQ(c.num_hidden_layers, 24);
  EXPECT_EQ(c.num_attention_heads, 14);
  EXPECT_EQ(c.num_key_value_heads, 2);
  EXPECT_EQ(c.head_dim, 64);  // 896 / 14
  EXPECT_DOUBLE_EQ(c.rms_norm_eps, 1e-6);
  EXPECT_DOUBLE_EQ(c.rope_theta, 1000000.0);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_FALSE(c.attention_bias.has_value());  // Qwen2's biases have no key
  EXPECT_FALSE(c.mlp_bias.has_value());
  EXPECT_EQ(c.sliding_window, std::optional<int64_t>(32768));
  EXPECT_EQ(c.use_sliding_window, std::optional<bool>(false));
  EXPECT_EQ(c.bos_token_ids, (std::vector<int64_t>{151643}));
  EXPECT_EQ(c.eos_token_ids, (std::vector<int64_t>{151643}));
}

TEST(HfConfigTest, TinyLlama) {
  const HfConfig c = ParseOk(kTinyLlama);
  EXPECT_EQ(c.vocab_size, 32000);
  EXPECT_EQ(c.hidden_size, 2048);
  EXPECT_EQ(c.intermediate_size, 5632);
  EXPECT_EQ(c.num_hidden_layers, 22);
  EXPECT_EQ(c.num_key_value_heads, 4);
  EXPECT_EQ(c.head_dim, 64);
  EXPECT_EQ(c.max_position_embeddings, 2048);
  EXPECT_EQ(c.rope_scaling.type, "none");  // "rope_scaling": null
  EXPECT_EQ(c.rope_scaling.factor, 1.0f);
  EXPECT_FALSE(c.tie_word_embeddings);
}

TEST(HfConfigTest, DefaultsForAbsentOptionalFields) {
  const HfConfig c = ParseOk(Variant(kTinyLlama, {{"num_key_value_heads", nullptr},
                                                  {"rope_theta", nullptr},
                                                  {"tie_word_embeddings", nullptr},
                                                  {"attention_bias", nullptr},
                                                  {"bos_token_id", nullptr},
                                                  {"eos_token_id", nullptr},
                                                  {"torch_dtype", nullptr},
                                                  {"hidden_act", nullptr},
                                                  {"dtype", "float16"}}));
  EXPECT_EQ(c.num_key_value_heads, 32);
  EXPECT_EQ(c.head_dim, 64);
  EXPECT_DOUBLE_EQ(c.rope_theta, 10000.0);
  EXPECT_FALSE(c.tie_word_embeddings);
  EXPECT_FALSE(c.attention_bias.has_value());
  EXPECT_EQ(c.hidden_act, "silu");
  EXPECT_TRUE(c.bos_token_ids.empty());
  EXPECT_TRUE(c.eos_token_ids.empty());
  EXPECT_EQ(c.torch_dtype, "float16");  // newer transformers write "dtype"
}

TEST(HfConfigTest, ExplicitHeadDimNeedNotDivideHidden) {
  // Mistral-Nemo: 32 heads of 128 with hidden 5120.
  const HfConfig c = ParseOk(Variant(kMistral7B, {{"hidden_size", 5120}, {"head_dim", 128}}));
  EXPECT_EQ(c.head_dim, 128);
}

TEST(HfConfigTest, BiasKeys) {
  const HfConfig c = ParseOk(Variant(kTinyLlama, {{"attention_bias", true}, {"mlp_bias", true}}));
  EXPECT_EQ(c.attention_bias, std::optional<bool>(true));
  EXPECT_EQ(c.mlp_bias, std::optional<bool>(true));
}

TEST(HfConfigTest, LinearAndDefaultRopeScaling) {
  const HfConfig linear =
      ParseOk(Variant(kTinyLlama, {{"rope_scaling", {{"type", "linear"}, {"factor", 4}}}}));
  EXPECT_EQ(linear.rope_scaling.type, "linear");
  EXPECT_EQ(linear.rope_scaling.factor, 4.0f);
  const HfConfig plain =
      ParseOk(Variant(kTinyLlama, {{"rope_scaling", {{"rope_type", "default"}}}}));
  EXPECT_EQ(plain.rope_scaling.type, "none");
}

struct BadConfig {
  const char* what;
  std::string text;
  ErrorCode code;
  std::vector<std::string_view> fragments;
};

TEST(HfConfigTest, RejectsBrokenConfigsNamingTheField) {
  const ErrorCode kInvalid = ErrorCode::kInvalidInput;
  const ErrorCode kUnsupported = ErrorCode::kUnsupported;
  // Llama-3.2-1B with its rope_scaling object patched.
  auto rope = [](const json& patch) {
    json config = json::parse(kLlama32_1B);
    config["rope_scaling"].merge_patch(patch);
    return config.dump();
  };
  // clang-format off
  const BadConfig cases[] = {
      {"malformed", "{\"vocab_size\": 3", kInvalid, {"malformed JSON"}},
      {"array", "[1]", kInvalid, {"expected a JSON object, got array"}},
      {"no architectures", Variant(kTinyLlama, {{"architectures", nullptr}}), kInvalid,
       {"missing required field 'architectures'"}},
      {"architectures string", Variant(kTinyLlama, {{"architectures", "LlamaForCausalLM"}}),
       kInvalid, {"field 'architectures': expected a non-empty list of strings, got string"}},
      {"missing hidden_size", Variant(kTinyLlama, {{"hidden_size", nullptr}}), kInvalid,
       {"missing required field 'hidden_size'"}},
      {"missing rms_norm_eps", Variant(kTinyLlama, {{"rms_norm_eps", nullptr}}), kInvalid,
       {"missing required field 'rms_norm_eps'"}},
      {"hidden_size string", Variant(kTinyLlama, {{"hidden_size", "2048"}}), kInvalid,
       {"field 'hidden_size': expected an integer, got string"}},
      {"hidden_size float", Variant(kTinyLlama, {{"hidden_size", 2048.0}}), kInvalid,
       {"field 'hidden_size': expected an integer, got number"}},
      {"zero hidden_size", Variant(kTinyLlama, {{"hidden_size", 0}}), kInvalid,
       {"field 'hidden_size' is 0, expected an integer from 1 to 2147483647"}},
      {"negative layers", Variant(kTinyLlama, {{"num_hidden_layers", -3}}), kInvalid,
       {"field 'num_hidden_layers' is -3"}},
      {"huge vocab", Variant(kTinyLlama, {{"vocab_size", 1000000000000}}), kInvalid,
       {"field 'vocab_size' is 1000000000000"}},
      {"heads do not divide hidden", Variant(kTinyLlama, {{"num_attention_heads", 3},
                                                          {"num_key_value_heads", 3}}),
       kInvalid, {"field 'num_attention_heads' (3) does not divide hidden_size (2048)"}},
      {"kv heads do not divide heads", Variant(kTinyLlama, {{"num_key_value_heads", 5}}), kInvalid,
       {"field 'num_key_value_heads' (5) does not divide num_attention_heads (32)"}},
      {"zero eps", Variant(kTinyLlama, {{"rms_norm_eps", 0}}), kInvalid,
       {"field 'rms_norm_eps' is 0, expected a positive number"}},
      {"theta string", Variant(kTinyLlama, {{"rope_theta", "1e4"}}), kInvalid,
       {"field 'rope_theta': expected a number, got string"}},
      {"tie string", Variant(kTinyLlama, {{"tie_word_embeddings", "true"}}), kInvalid,
       {"field 'tie_word_embeddings': expected a boolean, got string"}},
      {"eos string", Variant(kTinyLlama, {{"eos_token_id", "2"}}), kInvalid,
       {"field 'eos_token_id': expected a non-negative integer or a list of them, got string"}},
      {"eos list with string", Variant(kTinyLlama, {{"eos_token_id", {2, "x"}}}), kInvalid,
       {"field 'eos_token_id' holds string"}},
      {"zero sliding window", Variant(kMistral7B, {{"sliding_window", 0}}), kInvalid,
       {"field 'sliding_window' is 0"}},
      {"use_sliding_window string", Variant(kQwen25_05B, {{"use_sliding_window", "yes"}}),
       kInvalid, {"field 'use_sliding_window': expected a boolean, got string"}},
      {"rope yarn", rope({{"rope_type", "yarn"}}), kUnsupported,
       {"rope_scaling type 'yarn'", "none, linear, llama3"}},
      {"rope dynamic",
       Variant(kTinyLlama, {{"rope_scaling", {{"type", "dynamic"}, {"factor", 2}}}}),
       kUnsupported, {"rope_scaling type 'dynamic'"}},
      {"longrope factors of two lengths",
       rope({{"rope_type", "longrope"}, {"short_factor", {1.0}}, {"long_factor", {1.0, 2.0}}}),
       kInvalid, {"field 'rope_scaling.long_factor' has 2 entries, short_factor 1"}},
      {"longrope factor zero",
       rope({{"rope_type", "su"}, {"short_factor", {1.0, 0.0}}, {"long_factor", {1.0, 2.0}}}),
       kInvalid, {"field 'rope_scaling.short_factor' holds 0.0"}},
      {"partial_rotary_factor above 1", Variant(kTinyLlama, {{"partial_rotary_factor", 1.5}}),
       kInvalid, {"field 'partial_rotary_factor' is 1.5"}},
      {"rope without type", rope({{"rope_type", nullptr}}), kInvalid,
       {"missing required field 'rope_scaling.rope_type'"}},
      {"rope scaling string", Variant(kTinyLlama, {{"rope_scaling", "linear"}}), kInvalid,
       {"field 'rope_scaling': expected an object or null, got string"}},
      {"llama3 without low_freq_factor", rope({{"low_freq_factor", nullptr}}), kInvalid,
       {"missing required field 'rope_scaling.low_freq_factor'"}},
      {"llama3 without original context", rope({{"original_max_position_embeddings", nullptr}}),
       kInvalid, {"missing required field 'rope_scaling.original_max_position_embeddings'"}},
      {"llama3 low above high", rope({{"low_freq_factor", 4.0}}), kInvalid,
       {"field 'rope_scaling.low_freq_factor'", "must be below high_freq_factor"}},
      {"factor string", rope({{"factor", "32"}}), kInvalid,
       {"field 'rope_scaling.factor': expected a number, got string"}},
      {"factor negative", rope({{"factor", -1}}), kInvalid,
       {"field 'rope_scaling.factor' is -1, expected a positive number"}},
      {"factor beyond float", rope({{"factor", 1e300}}), kInvalid,
       {"field 'rope_scaling.factor'", "expected a positive number"}},
  };
  // clang-format on
  for (const BadConfig& c : cases) {
    SCOPED_TRACE(c.what);
    auto result = ParseHfConfig(c.text, "m/config.json");
    ExpectError(result, c.code, {"m/config.json"});
    for (std::string_view fragment : c.fragments) ExpectError(result, c.code, {fragment});
  }
}

TEST(HfConfigTest, LoadsFromFolderOrFile) {
  kite::testing::TempFolder folder("hf_config_load");
  kite::testing::WriteText(folder / "config.json", kQwen25_05B);
  auto from_folder = LoadHfConfig(folder.path().string());
  ASSERT_TRUE(from_folder.has_value()) << from_folder.error().message;
  EXPECT_EQ(from_folder->hidden_size, 896);
  auto from_file = LoadHfConfig((folder / "config.json").string());
  ASSERT_TRUE(from_file.has_value()) << from_file.error().message;
  EXPECT_EQ(from_file->vocab_size, 151936);

  ExpectError(LoadHfConfig((folder / "absent").string()), ErrorCode::kNotFound, {"absent"});
  kite::testing::WriteText(folder / "config.json", "{\"architectures\": [\"LlamaForCausalLM\"]}");
  ExpectError(LoadHfConfig(folder.path().string()), ErrorCode::kInvalidInput,
              {"config.json", "missing required field 'vocab_size'"});
}

}  // namespace
}  // namespace kite
