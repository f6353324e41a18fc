#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/mapped_file.h"
#include "models/model_spec.h"

namespace kite {
namespace {

namespace fs = std::filesystem;
const std::string kReference = KITE_SOURCE_DIR "/testdata/reference/";

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(LoadHfTest, LlamaWithGroupedQueryAttention) {
  auto spec = LoadHfModel(kReference + "llama-gqa");
  ASSERT_TRUE(spec.has_value()) << spec.error().message;
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
  EXPECT_EQ(spec->rope.mode, RopeSpec::Mode::kNeox);
  EXPECT_EQ(spec->rope.rotary_dim, 16);
  EXPECT_FALSE(spec->tied_embeddings);
  EXPECT_EQ(spec->weights.size(), 1u + 2 * 9 + 2);
  auto lm_head = spec->Weight("output.weight");
  ASSERT_TRUE(lm_head.has_value());
  EXPECT_EQ((*lm_head)->shape, (std::vector<int64_t>{1000, 64}));
  // F32: 2 x 1000x64 tables, the final norm, and per layer two norms, q/o 64x64, k/v 32x64
  // and three 160x64 MLP matrices.
  EXPECT_EQ(spec->WeightBytes(), (2u * 64000 + 64 + 2 * (128 + 8192 + 4096 + 30720)) * 4);
  EXPECT_EQ(spec->eos_ids, std::vector<int32_t>{2});
}

TEST(LoadHfTest, Qwen2HasQkvBiasesAndTiedEmbeddings) {
  auto spec = LoadHfModel(kReference + "qwen2-bias");
  ASSERT_TRUE(spec.has_value()) << spec.error().message;
  EXPECT_TRUE(spec->q_bias && spec->k_bias && spec->v_bias);
  EXPECT_FALSE(spec->o_bias || spec->mlp_bias);
  EXPECT_TRUE(spec->tied_embeddings);
  EXPECT_FLOAT_EQ(spec->rope.theta, 1e6f);
  EXPECT_FLOAT_EQ(spec->rms_eps, 1e-6f);
  EXPECT_EQ(spec->sliding_window, 0);  // use_sliding_window is false
  EXPECT_EQ((*spec->Weight("blk.1.attn_q.bias"))->dtype, DType::kF16);
}

TEST(LoadHfTest, RopeScalingAndAllBiases) {
  auto llama3 = LoadHfModel(kReference + "llama3-rope");
  ASSERT_TRUE(llama3.has_value()) << llama3.error().message;
  EXPECT_EQ(llama3->rope.scaling, RopeSpec::Scaling::kLlama3);
  EXPECT_FLOAT_EQ(llama3->rope.factor, 8.0f);
  EXPECT_FLOAT_EQ(llama3->rope.low_freq_factor, 1.0f);
  EXPECT_FLOAT_EQ(llama3->rope.high_freq_factor, 4.0f);
  EXPECT_EQ(llama3->rope.original_max_position, 32);

  auto linear = LoadHfModel(kReference + "llama-bias-linear");
  ASSERT_TRUE(linear.has_value()) << linear.error().message;
  EXPECT_EQ(linear->rope.scaling, RopeSpec::Scaling::kLinear);
  EXPECT_FLOAT_EQ(linear->rope.factor, 4.0f);
  EXPECT_TRUE(linear->q_bias && linear->o_bias && linear->mlp_bias);
  EXPECT_TRUE(linear->Weight("blk.0.ffn_down.bias").has_value());

  auto mistral = LoadHfModel(kReference + "mistral");
  ASSERT_TRUE(mistral.has_value()) << mistral.error().message;
  EXPECT_EQ(mistral->n_layers, 3);
  EXPECT_EQ(mistral->n_kv_heads, 1);
  EXPECT_EQ(mistral->sliding_window, 4096);
}

// A copy of a reference folder whose config.json and tensors a test may change.
class BrokenFolder {
 public:
  explicit BrokenFolder(const std::string& model, const std::string& name)
      : path_(::testing::TempDir() + "kite_load_hf_" + name) {
    fs::remove_all(path_);
    fs::create_directories(path_);
    for (const char* file : {"config.json", "tokenizer.model"}) {
      fs::copy_file(kReference + model + "/" + file, path_ + "/" + file);
    }
    auto file = SafetensorsFile::Open(kReference + model + "/model.safetensors");
    EXPECT_TRUE(file.has_value());
    if (file) source_ = std::make_unique<SafetensorsFile>(std::move(*file));
  }
  ~BrokenFolder() { fs::remove_all(path_); }

  const std::string& path() const { return path_; }

  void EditConfig(const std::function<void(nlohmann::json&)>& edit) {
    auto text = ReadTextFile(path_ + "/config.json", kConfigFileLimit);
    ASSERT_TRUE(text.has_value());
    nlohmann::json config = nlohmann::json::parse(*text, nullptr, false);
    ASSERT_TRUE(config.is_object());
    edit(config);
    std::ofstream(path_ + "/config.json") << config.dump();
  }

  // Writes model.safetensors with every source tensor, each passed through `edit` (which may
  // rename it, change its shape and bytes, or drop it by returning false), then `extra` F32
  // tensors of shape [2] (zeros).
  void WriteTensors(const std::function<bool(std::string&, nlohmann::json&, std::string&)>& edit,
                    const std::vector<std::string>& extra = {}) {
    nlohmann::json header = nlohmann::json::object();
    std::string data;
    for (const std::string& name : extra) {
      header[name] = {{"dtype", "F32"},
                      {"shape", {2}},
                      {"data_offsets", {data.size(), data.size() + 8}}};
      data += std::string(8, '\0');
    }
    for (const SafetensorsTensor& t : source_->tensors()) {
      std::string name = t.name;
      nlohmann::json shape = t.shape;
      std::string bytes(reinterpret_cast<const char*>(t.data), t.end - t.begin);
      if (!edit(name, shape, bytes)) continue;
      header[name] = {{"dtype", t.dtype_name},
                      {"shape", shape},
                      {"data_offsets", {data.size(), data.size() + bytes.size()}}};
      data += bytes;
    }
    const std::string json = header.dump();
    const uint64_t length = json.size();
    std::ofstream out(path_ + "/model.safetensors", std::ios::binary);
    out.write(reinterpret_cast<const char*>(&length), 8);
    out << json << data;
  }

 private:
  std::string path_;
  std::unique_ptr<SafetensorsFile> source_;
};

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

TEST(LoadHfTest, TokenizerLargerThanEmbeddingIsRefused) {
  BrokenFolder folder("llama-gqa", "small_vocab");
  folder.EditConfig([](nlohmann::json& c) { c["vocab_size"] = 900; });
  // Embedding and lm_head cut to their first 900 rows (64 f32 each).
  folder.WriteTensors([](std::string& name, nlohmann::json& shape, std::string& bytes) {
    if (name == "model.embed_tokens.weight" || name == "lm_head.weight") {
      shape = {900, 64};
      bytes.resize(900 * 64 * 4);
    }
    return true;
  });
  auto spec = LoadHfModel(folder.path());
  ASSERT_FALSE(spec.has_value());
  EXPECT_TRUE(Contains(spec.error().message, "1000 tokens")) << spec.error().message;
  EXPECT_TRUE(Contains(spec.error().message, "only 900 rows")) << spec.error().message;
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
  auto spec = LoadHfModel(folder.path());
  ASSERT_TRUE(spec.has_value()) << spec.error().message;
  EXPECT_TRUE(spec->tied_embeddings);
  EXPECT_FALSE(spec->Weight("output.weight").has_value());
}

TEST(LoadHfTest, PaddedEmbeddingWarnsWithBothSizes) {
  BrokenFolder folder("llama-gqa", "padded");
  folder.EditConfig([](nlohmann::json& c) { c["vocab_size"] = 1024; });
  // Embedding and lm_head grown to 1024 rows (64 f32 each) of zeros past the 1000 tokens.
  folder.WriteTensors([](std::string& name, nlohmann::json& shape, std::string& bytes) {
    if (name == "model.embed_tokens.weight" || name == "lm_head.weight") {
      shape = {1024, 64};
      bytes.resize(1024 * 64 * 4);
    }
    return true;
  });
  auto spec = LoadHfModel(folder.path());
  ASSERT_TRUE(spec.has_value()) << spec.error().message;
  ASSERT_EQ(spec->warnings.size(), 1u);
  EXPECT_TRUE(Contains(spec->warnings[0], "1000 tokens, the embedding 1024 rows"))
      << spec->warnings[0];
}

}  // namespace
}  // namespace kite
