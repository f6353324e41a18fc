// kite synth's presets against the published config.json of each model, and the files it
// writes: shapes, types, load in Kite, deterministic, weights of the intended scale, and every
// quantized type within its rounding of the f32 weights.
#include "export/synth.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "models/load_model.h"
#include "tokenizer/tokenizer.h"
#include "tensor/dequantize.h"

namespace kite {
namespace {

const std::string kTestdata = KITE_SOURCE_DIR "/testdata";

// From the Hugging Face config.json of meta-llama/Llama-3.2-1B, meta-llama/Llama-3.2-3B,
// Qwen/Qwen2.5-0.5B, HuggingFaceTB/SmolLM2-135M, Qwen/Qwen3-0.6B, google/gemma-3-1b-it and
// microsoft/Phi-4-mini-instruct.
struct Published {
  const char* name;
  const char* arch;
  int64_t layers, hidden, heads, kv_heads, head_dim, ffn, vocab, context;
  double theta, eps;
  bool llama3_scaling, qkv_bias;
};
constexpr Published kPublished[] = {
    {"llama-3.2-1b", "llama", 16, 2048, 32, 8, 64, 8192, 128256, 131072, 500000, 1e-5, true, false},
    {"llama-3.2-3b", "llama", 28, 3072, 24, 8, 128, 8192, 128256, 131072, 500000, 1e-5, true,
     false},
    {"qwen2.5-0.5b", "qwen2", 24, 896, 14, 2, 64, 4864, 151936, 32768, 1e6, 1e-6, false, true},
    {"smollm2-135m", "llama", 30, 576, 9, 3, 64, 1536, 49152, 8192, 100000, 1e-5, false, false},
    {"qwen3-0.6b", "qwen3", 28, 1024, 16, 8, 128, 3072, 151936, 40960, 1e6, 1e-6, false, false},
    {"gemma-3-1b", "gemma3", 26, 1152, 4, 1, 256, 6912, 262144, 32768, 1e6, 1e-6, false, false},
    {"phi-4-mini", "phi3", 32, 3072, 24, 8, 128, 8192, 200064, 131072, 10000, 1e-5, false, false},
};

TEST(SynthPresetTest, ShapesAreThePublishedOnes) {
  ASSERT_EQ(SynthPresets().size(), std::size(kPublished));
  for (const Published& want : kPublished) {
    auto preset = FindSynthPreset(want.name);
    ASSERT_TRUE(preset.has_value()) << want.name;
    const ModelConfig& c = (*preset)->config;
    EXPECT_EQ(c.architecture, want.arch) << want.name;
    EXPECT_EQ(c.n_layers, want.layers) << want.name;
    EXPECT_EQ(c.hidden, want.hidden) << want.name;
    EXPECT_EQ(c.n_heads, want.heads) << want.name;
    EXPECT_EQ(c.n_kv_heads, want.kv_heads) << want.name;
    EXPECT_EQ(c.head_dim, want.head_dim) << want.name;
    EXPECT_EQ(c.ffn, want.ffn) << want.name;
    EXPECT_EQ(c.vocab, want.vocab) << want.name;
    EXPECT_EQ(c.context_length, want.context) << want.name;
    EXPECT_EQ(c.rope.theta, want.theta) << want.name;
    EXPECT_EQ(c.rms_eps, static_cast<float>(want.eps)) << want.name;  // GGUF stores float32
    EXPECT_EQ(c.q_bias && c.k_bias && c.v_bias, want.qkv_bias) << want.name;
    EXPECT_EQ(c.q_bias || c.k_bias || c.v_bias, want.qkv_bias) << want.name;
    EXPECT_TRUE(c.tied_embeddings) << want.name;  // every preset ties lm_head to the embedding
    if (c.family == "phi3") {  // LongRoPE over 96 of 128 dims (partial_rotary_factor 0.75)
      EXPECT_EQ(c.rope.rotary_dim, 96);
      EXPECT_EQ(c.rope.scaling, RopeScaling::kDivisors);
      EXPECT_EQ(c.rope_long_factors.size(), 48u);
    } else if (want.llama3_scaling) {  // factor 32, low 1, high 4, original 8192
      EXPECT_EQ(c.rope.scaling, RopeScaling::kLlama3);
      EXPECT_EQ(c.rope.factor, 32.0);
      EXPECT_EQ(c.rope.low_freq_factor, 1.0);
      EXPECT_EQ(c.rope.high_freq_factor, 4.0);
      EXPECT_EQ(c.rope.original_max_position, 8192);
    } else {
      EXPECT_EQ(c.rope.scaling, RopeScaling::kNone) << want.name;
    }
  }
  auto unknown = FindSynthPreset("llama-4");
  ASSERT_FALSE(unknown.has_value());
  EXPECT_NE(unknown.error().message.find("qwen2.5-0.5b, smollm2-135m"), std::string::npos)
      << unknown.error().message;
}

TEST(SynthPresetTest, Llama32_3BTensorPlan) {
  SynthOptions options;
  options.preset = "llama-3.2-3b";
  options.type = "q4_k_m";
  auto plan = PlanSynthTensors(options);
  ASSERT_TRUE(plan.has_value()) << plan.error().message;
  // rope_freqs, token_embd, 28 blocks of 9, output_norm; no output.weight (tied).
  EXPECT_EQ(plan->size(), 1u + 1u + 28u * 9u + 1u);
  std::map<std::string, PlannedTensor> by_name;
  for (const PlannedTensor& t : *plan) by_name[t.name] = t;
  EXPECT_FALSE(by_name.contains("output.weight"));
  EXPECT_EQ(by_name["rope_freqs.weight"].shape, (std::vector<int64_t>{64}));
  EXPECT_EQ(by_name["token_embd.weight"].shape, (std::vector<int64_t>{128256, 3072}));
  EXPECT_EQ(by_name["token_embd.weight"].dtype, DType::kQ6_K);
  EXPECT_EQ(by_name["blk.0.attn_q.weight"].shape, (std::vector<int64_t>{3072, 3072}));
  EXPECT_EQ(by_name["blk.0.attn_k.weight"].shape, (std::vector<int64_t>{1024, 3072}));
  EXPECT_EQ(by_name["blk.0.attn_v.weight"].dtype, DType::kQ6_K);  // first eighth
  EXPECT_EQ(by_name["blk.4.attn_v.weight"].dtype, DType::kQ4_K);  // (4 - 28 / 8) % 3 != 2
  EXPECT_EQ(by_name["blk.5.attn_v.weight"].dtype, DType::kQ6_K);  // (5 - 28 / 8) % 3 == 2
  EXPECT_EQ(by_name["blk.5.ffn_down.weight"].shape, (std::vector<int64_t>{3072, 8192}));
  EXPECT_EQ(by_name["blk.27.ffn_norm.weight"].dtype, DType::kF32);
}

// Writes smollm2-135m cut to one block and 512 tokens.
std::string Synth(const std::string& type, uint64_t seed) {
  SynthOptions options;
  options.preset = "smollm2-135m";
  options.type = type;
  options.layers = 1;
  options.vocab = 512;
  options.seed = seed;
  options.data_dir = kTestdata;
  const std::string path =
      ::testing::TempDir() + "kite_synth_" + type + "_" + std::to_string(seed) + ".gguf";
  const Status written = SynthesizeGguf(options, path);
  EXPECT_TRUE(written.has_value()) << written.error().message;
  return path;
}

std::vector<float> Values(const GgufFile& file, const std::string& name) {
  const GgufTensorInfo* info = file.FindTensor(name);
  if (info == nullptr) return {};
  std::vector<float> out(*ElementCount(info->shape));
  EXPECT_TRUE(Dequantize(info->dtype, file.View(*info).data, out.data(), out.size()).has_value());
  return out;
}

TEST(SynthFileTest, LoadsWithThePresetShapesAndSaneWeights) {
  const std::string path = Synth("f32", 7);
  auto model = LoadGgufModel(path);
  ASSERT_TRUE(model.has_value()) << model.error().message;
  const ModelConfig* spec = &(*model)->config();
  EXPECT_EQ(spec->n_layers, 1);
  EXPECT_EQ(spec->hidden, 576);
  EXPECT_EQ(spec->n_heads, 9);
  EXPECT_EQ(spec->n_kv_heads, 3);
  EXPECT_EQ(spec->ffn, 1536);
  EXPECT_EQ(spec->vocab, 512);
  EXPECT_TRUE(spec->tied_embeddings);
  auto tokenizer = Tokenizer::Load(path);
  ASSERT_TRUE(tokenizer.has_value()) << tokenizer.error().message;
  EXPECT_EQ((*tokenizer)->vocab_size(), 512);
  EXPECT_FALSE((*tokenizer)->chat_template().empty());
  const GgufFile file = *GgufFile::Open(path);
  const std::vector<float> w = Values(file, "blk.0.ffn_up.weight");
  double sum = 0, sum_sq = 0;
  for (float v : w) sum += v, sum_sq += double{v} * v;
  const double mean = sum / w.size(), std = std::sqrt(sum_sq / w.size() - mean * mean);
  EXPECT_NEAR(mean, 0.0, 1e-4);
  EXPECT_NEAR(std, 0.02, 0.001);
  for (float v : Values(file, "blk.0.attn_norm.weight")) ASSERT_EQ(v, 1.0f);
  std::remove(path.c_str());
}

// The presets of the architectures beyond the Llama family load back as what they are, from
// their own GGUF keys (two layers, a small vocabulary).
TEST(SynthFileTest, NewArchitecturePresetsLoadBackWithTheirOwnKeys) {
  for (const char* preset : {"qwen3-0.6b", "gemma-3-1b", "phi-4-mini"}) {
    SCOPED_TRACE(preset);
    SynthOptions options;
    options.preset = preset;
    options.type = "q8_0";
    options.layers = 2;
    options.vocab = 512;
    options.data_dir = kTestdata;
    const std::string path = ::testing::TempDir() + "kite_synth_" + preset + ".gguf";
    const Status written = SynthesizeGguf(options, path);
    ASSERT_TRUE(written.has_value()) << written.error().message;
    auto model = LoadGgufModel(path);
    ASSERT_TRUE(model.has_value()) << model.error().message;
    const ModelConfig& c = (*model)->config();
    const ModelConfig& want = (*FindSynthPreset(preset))->config;
    EXPECT_EQ(c.family, want.family);
    EXPECT_EQ(c.qk_norm, want.qk_norm);
    EXPECT_EQ(c.rope.rotary_dim, want.rope.rotary_dim);
    EXPECT_EQ(c.sliding_window, want.sliding_window);
    EXPECT_EQ(c.sliding_window_pattern, want.sliding_window_pattern);
    EXPECT_FLOAT_EQ(c.attention_scale,
                    want.attention_scale > 0 ? want.attention_scale : c.attention_scale);
    EXPECT_EQ(c.rope_long_factors, want.rope_long_factors);
    EXPECT_EQ(c.rope.divisors, want.rope.divisors);
    EXPECT_FLOAT_EQ(c.rope.attention_factor, want.rope.attention_factor);
    EXPECT_TRUE((*model)->BuildGraph({.tokens = 3}).has_value());
    std::remove(path.c_str());
  }
}

TEST(SynthFileTest, SameSeedSameBytes) {
  const std::string a = Synth("q4_0", 3);
  const std::string b = Synth("q4_0", 3);
  const std::string c = Synth("q4_0", 4);
  const auto read = [](const std::string& path) { return *ReadTextFile(path, kConfigFileLimit); };
  EXPECT_EQ(read(a), read(b));
  EXPECT_NE(read(a), read(c));
  for (const std::string& path : {a, b, c}) std::remove(path.c_str());
}

// Each type's weights, dequantized by Kite, are the f32 file's within the type's rounding:
// RMS error relative to the weights' RMS (0.02).
TEST(SynthFileTest, QuantizedTypesDequantizeToTheF32Weights) {
  const std::string reference_path = Synth("f32", 11);
  const GgufFile reference = *GgufFile::Open(reference_path);
  const std::pair<const char*, double> cases[] = {{"f16", 1e-3},  {"bf16", 5e-3}, {"q8_0", 0.01},
                                                  {"q6_k", 0.04}, {"q5_k", 0.08}, {"q4_0", 0.15},
                                                  {"q4_1", 0.15}, {"q4_k", 0.15}, {"q4_k_m", 0.15}};
  for (const auto& [type, relative] : cases) {
    const std::string path = Synth(type, 11);
    auto file = GgufFile::Open(path);
    ASSERT_TRUE(file.has_value()) << type;
    ASSERT_TRUE(LoadGgufModel(path).has_value()) << type;
    for (const GgufTensorInfo& info : reference.tensors()) {
      const std::vector<float> want = Values(reference, info.name);
      const std::vector<float> got = Values(*file, info.name);
      ASSERT_EQ(got.size(), want.size()) << type << " " << info.name;
      double err = 0, norm = 0;
      for (size_t i = 0; i < want.size(); ++i) {
        err += (double{got[i]} - want[i]) * (double{got[i]} - want[i]);
        norm += double{want[i]} * want[i];
      }
      EXPECT_LE(std::sqrt(err / norm), relative) << type << " " << info.name;
    }
    std::remove(path.c_str());
  }
  std::remove(reference_path.c_str());
}

// --quiet-from 1 --quiet-scale 0.25 on 3 blocks: block 0 and the embeddings are a 1-block
// synth's, bit for bit (the draft model's half of the pair); the later blocks' output
// projections are exactly a quarter of the plain 3-block synth's (a power of two: no rounding),
// and their other weights are the plain ones.
TEST(SynthFileTest, QuietBlocksScaleOnlyTheirOutputProjections) {
  auto write = [](int64_t layers, int64_t quiet_from, const std::string& name) {
    SynthOptions options;
    options.preset = "smollm2-135m";
    options.type = "f32";
    options.layers = layers;
    options.vocab = 512;
    options.seed = 5;
    options.quiet_from = quiet_from;
    options.quiet_scale = 0.25f;
    options.data_dir = kTestdata;
    const std::string path = ::testing::TempDir() + "kite_synth_" + name + ".gguf";
    const Status written = SynthesizeGguf(options, path);
    EXPECT_TRUE(written.has_value()) << written.error().message;
    return path;
  };
  const std::string small_path = write(1, 0, "small");
  const std::string plain_path = write(3, 0, "plain");
  const std::string quiet_path = write(3, 1, "quiet");
  const GgufFile small = *GgufFile::Open(small_path);
  const GgufFile plain = *GgufFile::Open(plain_path);
  const GgufFile quiet = *GgufFile::Open(quiet_path);
  for (const GgufTensorInfo& info : small.tensors()) {
    EXPECT_EQ(Values(quiet, info.name), Values(small, info.name)) << info.name;
  }
  for (const char* name : {"blk.1.attn_output.weight", "blk.1.ffn_down.weight",
                           "blk.2.attn_output.weight", "blk.2.ffn_down.weight"}) {
    std::vector<float> quarter = Values(plain, name);
    ASSERT_FALSE(quarter.empty()) << name;
    for (float& v : quarter) v *= 0.25f;
    EXPECT_EQ(Values(quiet, name), quarter) << name;
  }
  for (const char* name :
       {"blk.1.attn_q.weight", "blk.2.ffn_up.weight", "blk.2.attn_norm.weight"}) {
    EXPECT_EQ(Values(quiet, name), Values(plain, name)) << name;
  }
  for (const std::string& path : {small_path, plain_path, quiet_path}) std::remove(path.c_str());
}

TEST(SynthFileTest, BadOptionsAreNamed) {
  SynthOptions options;
  options.preset = "smollm2-135m";
  options.type = "q3_k";
  options.data_dir = kTestdata;
  auto bad_type = SynthesizeGguf(options, ::testing::TempDir() + "kite_synth_bad.gguf");
  ASSERT_FALSE(bad_type.has_value());
  EXPECT_NE(bad_type.error().message.find("q4_k_m"), std::string::npos);
  options.type = "f16";
  options.tokenizer = kTestdata + "/missing-tokenizer";
  auto bad_tokenizer = SynthesizeGguf(options, ::testing::TempDir() + "kite_synth_bad.gguf");
  ASSERT_FALSE(bad_tokenizer.has_value());
  EXPECT_NE(bad_tokenizer.error().message.find("missing-tokenizer"), std::string::npos);
  options.tokenizer.clear();
  options.quiet_scale = 2.0f;
  auto bad_scale = SynthesizeGguf(options, ::testing::TempDir() + "kite_synth_bad.gguf");
  ASSERT_FALSE(bad_scale.has_value());
  EXPECT_NE(bad_scale.error().message.find("--quiet-scale"), std::string::npos);
}

}  // namespace
}  // namespace kite
