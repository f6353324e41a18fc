#include "models/model_spec.h"

#include <algorithm>
#include <filesystem>
#include <set>

namespace kite {

Result<const TensorView*> ModelSpec::Weight(std::string_view name) const {
  auto it = weights.find(name);
  if (it == weights.end()) {
    return NotFound(source + ": model has no weight '" + std::string(name) + "'");
  }
  return &it->second;
}

uint64_t ModelSpec::WeightBytes() const {
  std::set<const void*> seen;
  uint64_t bytes = 0;
  for (const auto& [name, view] : weights) {
    if (seen.insert(view.data).second) bytes += view.bytes;
  }
  return bytes;
}

std::string ModelSpec::Summary() const {
  auto s = [](auto v) { return std::to_string(v); };
  std::string text = family + " (" + architecture + "): " + s(n_layers) + " layers, hidden " +
                     s(hidden) + ", " + s(n_heads) + " heads (" + s(n_kv_heads) + " kv) of " +
                     s(head_dim) + ", ffn " + s(ffn) + ", vocab " + s(vocab) + ", rope " +
                     (rope.mode == RopeSpec::Mode::kNeox ? "neox" : "interleaved") + " theta " +
                     s(rope.theta);
  if (rope.scaling == RopeSpec::Scaling::kLinear) text += " linear x" + s(rope.factor);
  if (rope.scaling == RopeSpec::Scaling::kLlama3) text += " llama3 x" + s(rope.factor);
  text += ", context " + s(context_length);
  if (tied_embeddings) text += ", tied embeddings";
  return text;
}

std::vector<ExpectedTensor> LlamaTensors(const ModelSpec& spec) {
  const int64_t hidden = spec.hidden;
  const int64_t q_dim = static_cast<int64_t>(spec.n_heads) * spec.head_dim;
  const int64_t kv_dim = static_cast<int64_t>(spec.n_kv_heads) * spec.head_dim;
  const int64_t ffn = spec.ffn;
  std::vector<ExpectedTensor> tensors;
  auto add = [&](std::string name, std::vector<int64_t> shape) {
    tensors.push_back({std::move(name), std::move(shape)});
  };
  add("token_embd.weight", {spec.vocab, hidden});
  for (int32_t layer = 0; layer < spec.n_layers; ++layer) {
    const std::string blk = "blk." + std::to_string(layer) + ".";
    add(blk + "attn_norm.weight", {hidden});
    add(blk + "attn_q.weight", {q_dim, hidden});
    if (spec.q_bias) add(blk + "attn_q.bias", {q_dim});
    add(blk + "attn_k.weight", {kv_dim, hidden});
    if (spec.k_bias) add(blk + "attn_k.bias", {kv_dim});
    add(blk + "attn_v.weight", {kv_dim, hidden});
    if (spec.v_bias) add(blk + "attn_v.bias", {kv_dim});
    add(blk + "attn_output.weight", {hidden, q_dim});
    if (spec.o_bias) add(blk + "attn_output.bias", {hidden});
    add(blk + "ffn_norm.weight", {hidden});
    add(blk + "ffn_gate.weight", {ffn, hidden});
    add(blk + "ffn_up.weight", {ffn, hidden});
    add(blk + "ffn_down.weight", {hidden, ffn});
    if (spec.mlp_bias) {
      add(blk + "ffn_gate.bias", {ffn});
      add(blk + "ffn_up.bias", {ffn});
      add(blk + "ffn_down.bias", {hidden});
    }
  }
  add("output_norm.weight", {hidden});
  if (!spec.tied_embeddings) add("output.weight", {spec.vocab, hidden});
  return tensors;
}

Status BindWeights(ModelSpec* spec,
                   const std::function<Result<std::optional<TensorView>>(const std::string&)>& find,
                   const std::function<std::string(const std::string&)>& file_name) {
  for (const ExpectedTensor& expected : LlamaTensors(*spec)) {
    const std::optional<TensorView> view = KITE_TRY(find(expected.name));
    if (!view) {
      return NotFound(spec->source + ": missing tensor '" + file_name(expected.name) +
                      "', expected shape " + ShapeString(expected.shape));
    }
    if (view->shape != expected.shape) {
      return InvalidInput(spec->source + ": tensor '" + file_name(expected.name) + "' has shape " +
                          ShapeString(view->shape) + ", expected " + ShapeString(expected.shape));
    }
    TensorView bound = *view;
    bound.name = expected.name;
    spec->weights[expected.name] = std::move(bound);
  }
  return Ok();
}

Status FinishSpec(ModelSpec* spec, std::span<const int64_t> config_eos_ids) {
  const std::string& src = spec->source;
  auto positive = [&](const char* field, int64_t value) -> Status {
    if (value <= 0) {
      return InvalidInput(src + ": " + field + " is " + std::to_string(value) + ", expected > 0");
    }
    return Ok();
  };
  KITE_RETURN_IF_ERROR(positive("layer count", spec->n_layers));
  KITE_RETURN_IF_ERROR(positive("hidden size", spec->hidden));
  KITE_RETURN_IF_ERROR(positive("head count", spec->n_heads));
  KITE_RETURN_IF_ERROR(positive("kv head count", spec->n_kv_heads));
  KITE_RETURN_IF_ERROR(positive("head dim", spec->head_dim));
  KITE_RETURN_IF_ERROR(positive("feed-forward size", spec->ffn));
  KITE_RETURN_IF_ERROR(positive("vocab size", spec->vocab));
  KITE_RETURN_IF_ERROR(positive("context length", spec->context_length));
  if (spec->n_heads % spec->n_kv_heads != 0) {
    return InvalidInput(src + ": " + std::to_string(spec->n_heads) +
                        " attention heads are not a multiple of " +
                        std::to_string(spec->n_kv_heads) + " kv heads");
  }
  if (!(spec->rms_eps > 0.0f)) {
    return InvalidInput(src + ": rms norm epsilon " + std::to_string(spec->rms_eps) +
                        ", expected > 0");
  }
  if (spec->tokenizer == nullptr) return Internal(src + ": no tokenizer loaded");
  const int32_t tokenizer_vocab = spec->tokenizer->vocab_size();
  if (tokenizer_vocab > spec->vocab) {
    // Fewer tokens than embedding rows is normal (rows padded to a multiple of 64 or 128);
    // more would let the tokenizer emit ids the model has no row for.
    return InvalidInput(src + ": the tokenizer has " + std::to_string(tokenizer_vocab) +
                        " tokens but the model's embedding has only " +
                        std::to_string(spec->vocab) + " rows");
  }
  spec->eos_ids.clear();
  auto add_eos = [&](int64_t id) {
    if (id >= 0 && id < spec->vocab &&
        std::find(spec->eos_ids.begin(), spec->eos_ids.end(), id) == spec->eos_ids.end()) {
      spec->eos_ids.push_back(static_cast<int32_t>(id));
    }
  };
  for (int32_t id : spec->tokenizer->eos_ids()) add_eos(id);
  for (int64_t id : config_eos_ids) add_eos(id);
  spec->chat_template = spec->tokenizer->chat_template();
  return Ok();
}

Result<ModelSpec> LoadModelSpec(const std::string& path) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) return LoadHfModel(path);
  if (!std::filesystem::exists(path, error)) {
    return NotFound(path +
                    ": no such file or folder (expected a Hugging Face model folder or a "
                    ".gguf file)");
  }
  if (path.ends_with(".safetensors") || path.ends_with("config.json")) {
    const std::string folder = std::filesystem::path(path).parent_path().string();
    return LoadHfModel(folder.empty() ? "." : folder);
  }
  return LoadGgufModel(path);
}

}  // namespace kite
