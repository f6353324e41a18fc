// A llama.cpp GGUF file -> Model. Hyper-parameters come from the {arch}.* keys, the weights are
// used in place under their GGUF names (Kite's canonical names). The tokenizer (tokenizer.ggml.*)
// is read beside it by the runtime.
//
// RoPE layout: llama.cpp's converter permutes the q/k rows of arch "llama" models so that each
// head's rotate-half pairs (i, i + D/2) become adjacent (2i, 2i + 1), and runs rope in its
// "normal" (interleaved) mode; "qwen2" weights keep the HF order and run in neox mode. Running
// each in its mode on the rows as stored gives the HF model's attention exactly.
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "format/gguf.h"
#include "models/activation_encodings_gguf.h"
#include "models/compiled_gguf.h"
#include "models/encoded_weight_gguf.h"
#include "models/gguf_keys.h"
#include "models/load_model.h"

namespace kite {

namespace {

struct GgufArchitecture {
  std::string_view name;
  RopeMode rope_mode;
  std::string_view family;  // the graph builder (models/architectures.h)
};

// llama.cpp's rope type of each (llama_model_rope_type): "norm" for llama, neox for the others.
constexpr std::array<GgufArchitecture, 6> kArchitectures = {{
    {"llama", RopeMode::kInterleaved, "llama"},
    {"qwen2", RopeMode::kNeox, "llama"},
    {"qwen3", RopeMode::kNeox, "qwen3"},
    {"phi3", RopeMode::kNeox, "phi3"},
    {"gemma2", RopeMode::kNeox, "gemma"},
    {"gemma3", RopeMode::kNeox, "gemma"},
}};

Status SetRopeScaling(const GgufFile& gguf, const GgufKeys& keys, RopeAttrs* rope) {
  std::string type = "none";
  if (keys.Has("rope.scaling.type")) type = KITE_TRY(gguf.GetString(keys.Key("rope.scaling.type")));
  if (type == "linear") {
    rope->scaling = RopeScaling::kLinear;
    rope->factor = KITE_TRY(keys.Float("rope.scaling.factor", 1.0f));
  } else if (type != "none") {
    return Unsupported(gguf.name() + ": " + keys.Key("rope.scaling.type") + " '" + type +
                       "' is not supported (supported: none, linear; Llama 3 scaling comes as "
                       "rope_freqs.weight)");
  }
  const GgufTensorInfo* freqs = gguf.FindTensor("rope_freqs.weight");
  if (freqs == nullptr) return Ok();
  if (rope->scaling != RopeScaling::kNone) {
    return Unsupported(gguf.name() + ": both " + keys.Key("rope.scaling.type") +
                       " and rope_freqs.weight are given");
  }
  // Llama 3.x: each rotary pair's frequency divisor, which the rope op applies as given (as
  // llama.cpp does), whatever scaling computed them.
  rope->divisors = KITE_TRY(ReadConfigTensor(gguf, "rope_freqs.weight", rope->rotary_dim / 2));
  rope->scaling = RopeScaling::kDivisors;
  return Ok();
}

}  // namespace

Result<std::unique_ptr<Model>> LoadGgufModel(const std::string& path) {
  return LoadGgufModel(std::make_shared<const GgufFile>(KITE_TRY(GgufFile::Open(path))), path);
}

Result<std::unique_ptr<Model>> LoadGgufModel(std::shared_ptr<const GgufFile> gguf,
                                             const std::string& path) {
  const std::string arch = KITE_TRY(gguf->GetString("general.architecture"));
  const GgufArchitecture* known = nullptr;
  std::string names;
  for (const GgufArchitecture& candidate : kArchitectures) {
    if (candidate.name == arch) known = &candidate;
    names += (names.empty() ? "" : ", ") + std::string(candidate.name);
  }
  if (known == nullptr) {
    return Unsupported(path + ": general.architecture '" + arch +
                       "' is not supported (supported: " + names + ")");
  }
  const GgufKeys keys(*gguf, arch);

  ModelConfig config;
  config.family = std::string(known->family);
  config.architecture = arch;
  config.source = path;
  config.n_layers = KITE_TRY(keys.Int("block_count"));
  config.hidden = KITE_TRY(keys.Int("embedding_length"));
  config.ffn = KITE_TRY(keys.Int("feed_forward_length"));
  config.n_heads = KITE_TRY(keys.Int("attention.head_count"));
  config.n_kv_heads = KITE_TRY(keys.Int("attention.head_count_kv", config.n_heads));
  config.head_dim = KITE_TRY(keys.Int("attention.key_length", config.hidden / config.n_heads));
  if (keys.Has("attention.value_length") &&
      KITE_TRY(keys.Int("attention.value_length")) != config.head_dim) {
    return Unsupported(path + ": " + keys.Key("attention.value_length") + " differs from " +
                       keys.Key("attention.key_length"));
  }
  config.rms_eps = KITE_TRY(keys.Float("attention.layer_norm_rms_epsilon", 1e-5f));
  config.context_length = KITE_TRY(keys.Int("context_length"));
  config.rope.mode = known->rope_mode;
  config.rope.theta = KITE_TRY(keys.Float("rope.freq_base", 10000.0f));
  config.rope.rotary_dim = KITE_TRY(keys.Int("rope.dimension_count", config.head_dim));
  if (config.rope.rotary_dim % 2 != 0 || config.rope.rotary_dim > config.head_dim) {
    return InvalidInput(path + ": " + keys.Key("rope.dimension_count") + " is " +
                        std::to_string(config.rope.rotary_dim) +
                        ", expected an even number up to "
                        "the head dim " +
                        std::to_string(config.head_dim));
  }
  KITE_RETURN_IF_ERROR(SetRopeScaling(*gguf, keys, &config.rope));

  // Sizes the keys do not give come from the tensors: vocab from the embedding's rows, the
  // optional parts from whether block 0 has them (every block must then have them).
  const GgufTensorInfo* embedding = gguf->FindTensor("token_embd.weight");
  if (embedding == nullptr || embedding->shape.size() != 2) {
    return NotFound(path + ": missing tensor 'token_embd.weight' [vocab, " +
                    std::to_string(config.hidden) + "]");
  }
  if (embedding->shape[0] > INT32_MAX) {
    return InvalidInput(path + ": token_embd.weight has " + std::to_string(embedding->shape[0]) +
                        " rows");
  }
  config.vocab = static_cast<int32_t>(embedding->shape[0]);
  config.tied_embeddings = gguf->FindTensor("output.weight") == nullptr;
  auto has = [&](const char* name) { return gguf->FindTensor(name) != nullptr; };
  config.q_bias = has("blk.0.attn_q.bias");
  config.k_bias = has("blk.0.attn_k.bias");
  config.v_bias = has("blk.0.attn_v.bias");
  config.o_bias = has("blk.0.attn_output.bias");
  config.mlp_bias = has("blk.0.ffn_down.bias");
  config.activation_encodings = KITE_TRY(ReadActivationEncodingKeys(*gguf)).by_node;
  config.compiled = KITE_TRY(ReadCompiledKeys(*gguf));
  if (keys.Has("attention.sliding_window")) {
    const int64_t window = KITE_TRY(gguf->GetInt(keys.Key("attention.sliding_window")));
    if (window < 0 || window > INT32_MAX) {
      return InvalidInput(path + ": " + keys.Key("attention.sliding_window") + " is " +
                          std::to_string(window) + ", expected 0.." + std::to_string(INT32_MAX));
    }
    config.sliding_window = static_cast<int32_t>(window);  // 0: none (Phi-4's converter)
  }

  const Architecture* architecture = KITE_TRY(FindArchitecture(config));
  if (architecture->from_gguf != nullptr) {
    KITE_RETURN_IF_ERROR(architecture->from_gguf(*gguf, arch, &config));
  }
  KITE_RETURN_IF_ERROR(config.Check());
  const GgufFile& file = *gguf;
  const auto file_name = [](const std::string& name) { return name; };
  WeightStore store;
  // Weights stored as integer codes with an encoding (docs/quantized_gguf.md) are bound with
  // their logical shape and code dtype; the model keeps their encodings.
  KITE_RETURN_IF_ERROR(CheckWeightEncodingKeys(file));
  std::map<std::string, QuantEncoding, std::less<>> encodings;
  KITE_RETURN_IF_ERROR(BindWeights(
      config, architecture->tensors(config),
      [&](const std::string& name) -> Result<std::optional<TensorView>> {
        const GgufTensorInfo* info = file.FindTensor(name);
        if (info == nullptr) return std::optional<TensorView>();
        std::optional<EncodedWeight> encoded = KITE_TRY(ReadEncodedWeight(file, name));
        if (!encoded) return std::optional<TensorView>(file.View(*info));
        encodings.emplace(name, std::move(encoded->encoding));
        return std::optional<TensorView>(std::move(encoded->view));
      },
      file_name, &store));
  std::vector<std::string> file_tensors;
  for (const GgufTensorInfo& info : file.tensors()) file_tensors.push_back(info.name);
  KITE_RETURN_IF_ERROR(RefuseUnusedTensors(
      config, store, file_name, file_tensors,
      // rope_freqs.weight (Llama 3.x GGUFs) is not a graph weight: SetRopeScaling read it into
      // config.rope above. An encoded weight's companions were read with it.
      // Phi-3's LongRoPE factors likewise (models/phi3.cpp read them).
      [&](std::string_view name) {
        return name == "rope_freqs.weight" || name == "rope_factors_long.weight" ||
               name == "rope_factors_short.weight" || IsEncodingCompanion(file, name);
      },
      "key '" + keys.Key("block_count") + "'"));

  store.Keep(std::move(gguf));
  std::unique_ptr<Model> model =
      architecture->create(std::move(config), std::move(store), file_name);
  model->SetWeightEncodings(std::move(encodings));
  return model;
}

}  // namespace kite
