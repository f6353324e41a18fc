// A llama.cpp GGUF file -> ModelSpec. Hyper-parameters come from the {arch}.* keys, the weights
// are used in place under their GGUF names (Kite's canonical names), the tokenizer from the
// tokenizer.ggml.* keys.
//
// RoPE layout: llama.cpp's converter permutes the q/k rows of arch "llama" models so that each
// head's rotate-half pairs (i, i + D/2) become adjacent (2i, 2i + 1), and runs rope in its
// "normal" (interleaved) mode; "qwen2" weights keep the HF order and run in neox mode. Running
// each in its mode on the rows as stored gives the HF model's attention exactly.
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "format/gguf.h"
#include "models/model_spec.h"
#include "models/rope_freqs.h"

namespace kite {

namespace {

struct GgufArchitecture {
  std::string_view name;
  RopeSpec::Mode rope_mode;
};

constexpr std::array<GgufArchitecture, 2> kArchitectures = {{
    {"llama", RopeSpec::Mode::kInterleaved},
    {"qwen2", RopeSpec::Mode::kNeox},
}};

// Reads integer keys into int32 fields with range checks; messages name the file and key.
class Keys {
 public:
  Keys(const GgufFile& gguf, std::string arch) : gguf_(gguf), arch_(std::move(arch)) {}

  std::string Key(std::string_view suffix) const { return arch_ + "." + std::string(suffix); }
  bool Has(std::string_view suffix) const { return gguf_.Find(Key(suffix)) != nullptr; }

  Result<int32_t> Int(std::string_view suffix) const {
    const int64_t value = KITE_TRY(gguf_.GetInt(Key(suffix)));
    if (value <= 0 || value > INT32_MAX) {
      return InvalidInput(gguf_.name() + ": key '" + Key(suffix) + "' is " + std::to_string(value) +
                          ", expected 1.." + std::to_string(INT32_MAX));
    }
    return static_cast<int32_t>(value);
  }
  Result<int32_t> Int(std::string_view suffix, int32_t fallback) const {
    if (!Has(suffix)) return fallback;
    return Int(suffix);
  }
  Result<float> Float(std::string_view suffix, float fallback) const {
    if (!Has(suffix)) return fallback;
    const double value = KITE_TRY(gguf_.GetFloat(Key(suffix)));
    if (!std::isfinite(value) || value <= 0.0) {
      return InvalidInput(gguf_.name() + ": key '" + Key(suffix) + "' is " + std::to_string(value) +
                          ", expected a finite value > 0");
    }
    return static_cast<float>(value);
  }

 private:
  const GgufFile& gguf_;
  std::string arch_;
};

Status SetRopeScaling(const GgufFile& gguf, const Keys& keys, RopeSpec* rope) {
  std::string type = "none";
  if (keys.Has("rope.scaling.type")) type = KITE_TRY(gguf.GetString(keys.Key("rope.scaling.type")));
  if (type == "linear") {
    rope->scaling = RopeSpec::Scaling::kLinear;
    rope->factor = KITE_TRY(keys.Float("rope.scaling.factor", 1.0f));
  } else if (type != "none") {
    return Unsupported(gguf.name() + ": " + keys.Key("rope.scaling.type") + " '" + type +
                       "' is not supported (supported: none, linear; Llama 3 scaling comes as "
                       "rope_freqs.weight)");
  }
  const GgufTensorInfo* freqs = gguf.FindTensor("rope_freqs.weight");
  if (freqs == nullptr) return Ok();
  if (rope->scaling != RopeSpec::Scaling::kNone) {
    return Unsupported(gguf.name() + ": both " + keys.Key("rope.scaling.type") +
                       " and rope_freqs.weight are given");
  }
  const std::string what = gguf.name() + ": tensor 'rope_freqs.weight'";
  if (freqs->dtype != DType::kF32 || freqs->shape.size() != 1) {
    return InvalidInput(what + " is " + ShapeString(freqs->shape) + " " +
                        std::string(DTypeName(freqs->dtype)) + ", expected [" +
                        std::to_string(rope->rotary_dim / 2) + "] f32");
  }
  const TensorView view = gguf.View(*freqs);
  std::vector<float> divisors(freqs->shape[0]);
  std::memcpy(divisors.data(), view.data, divisors.size() * sizeof(float));
  return RopeScalingFromDivisors(divisors, what, rope);
}

}  // namespace

Result<ModelSpec> LoadGgufModel(const std::string& path) {
  auto gguf = std::make_unique<GgufFile>(KITE_TRY(GgufFile::Open(path)));
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
  const Keys keys(*gguf, arch);

  ModelSpec spec;
  spec.family = "llama";
  spec.architecture = arch;
  spec.source = path;
  spec.n_layers = KITE_TRY(keys.Int("block_count"));
  spec.hidden = KITE_TRY(keys.Int("embedding_length"));
  spec.ffn = KITE_TRY(keys.Int("feed_forward_length"));
  spec.n_heads = KITE_TRY(keys.Int("attention.head_count"));
  spec.n_kv_heads = KITE_TRY(keys.Int("attention.head_count_kv", spec.n_heads));
  spec.head_dim = KITE_TRY(keys.Int("attention.key_length", spec.hidden / spec.n_heads));
  if (keys.Has("attention.value_length") &&
      KITE_TRY(keys.Int("attention.value_length")) != spec.head_dim) {
    return Unsupported(path + ": " + keys.Key("attention.value_length") + " differs from " +
                       keys.Key("attention.key_length"));
  }
  spec.rms_eps = KITE_TRY(keys.Float("attention.layer_norm_rms_epsilon", 1e-5f));
  spec.context_length = KITE_TRY(keys.Int("context_length"));
  spec.rope.mode = known->rope_mode;
  spec.rope.theta = KITE_TRY(keys.Float("rope.freq_base", 10000.0f));
  spec.rope.rotary_dim = KITE_TRY(keys.Int("rope.dimension_count", spec.head_dim));
  if (spec.rope.rotary_dim % 2 != 0 || spec.rope.rotary_dim > spec.head_dim) {
    return InvalidInput(path + ": " + keys.Key("rope.dimension_count") + " is " +
                        std::to_string(spec.rope.rotary_dim) +
                        ", expected an even number up to "
                        "the head dim " +
                        std::to_string(spec.head_dim));
  }
  KITE_RETURN_IF_ERROR(SetRopeScaling(*gguf, keys, &spec.rope));

  // Sizes the keys do not give come from the tensors: vocab from the embedding's rows, the
  // optional parts from whether block 0 has them (every block must then have them).
  const GgufTensorInfo* embedding = gguf->FindTensor("token_embd.weight");
  if (embedding == nullptr || embedding->shape.size() != 2) {
    return NotFound(path + ": missing tensor 'token_embd.weight' [vocab, " +
                    std::to_string(spec.hidden) + "]");
  }
  if (embedding->shape[0] > INT32_MAX) {
    return InvalidInput(path + ": token_embd.weight has " + std::to_string(embedding->shape[0]) +
                        " rows");
  }
  spec.vocab = static_cast<int32_t>(embedding->shape[0]);
  spec.tied_embeddings = gguf->FindTensor("output.weight") == nullptr;
  auto has = [&](const char* name) { return gguf->FindTensor(name) != nullptr; };
  spec.q_bias = has("blk.0.attn_q.bias");
  spec.k_bias = has("blk.0.attn_k.bias");
  spec.v_bias = has("blk.0.attn_v.bias");
  spec.o_bias = has("blk.0.attn_output.bias");
  spec.mlp_bias = has("blk.0.ffn_down.bias");

  const GgufFile& file = *gguf;
  KITE_RETURN_IF_ERROR(BindWeights(
      &spec,
      [&](const std::string& name) -> Result<std::optional<TensorView>> {
        const GgufTensorInfo* info = file.FindTensor(name);
        if (info == nullptr) return std::optional<TensorView>();
        return std::optional<TensorView>(file.View(*info));
      },
      [](const std::string& name) { return name; }));
  std::vector<std::string> file_tensors;
  for (const GgufTensorInfo& info : file.tensors()) file_tensors.push_back(info.name);
  KITE_RETURN_IF_ERROR(RefuseUnusedTensors(
      spec, file_tensors,
      // rope_freqs.weight (Llama 3.x GGUFs) is not a graph weight: SetRopeScaling read it into
      // spec.rope above.
      [](std::string_view name) { return name == "rope_freqs.weight"; },
      "key '" + keys.Key("block_count") + "'"));

  spec.tokenizer = KITE_TRY(Tokenizer::FromGguf(file));
  spec.gguf = std::move(gguf);
  KITE_RETURN_IF_ERROR(FinishSpec(&spec, {}));
  return spec;
}

}  // namespace kite
