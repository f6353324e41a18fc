#include "models/model_spec.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <optional>
#include <set>

namespace kite {

namespace {

// Unused tensors listed by name in an error; the rest are counted.
constexpr size_t kListedTensors = 10;

// The layer a tensor name belongs to: N in "blk.N." (GGUF) or "layers.N." (transformers).
std::optional<int64_t> LayerIndex(std::string_view name) {
  for (std::string_view prefix : {"blk.", "layers."}) {
    size_t at = name.find(prefix);
    if (at == std::string_view::npos || (at > 0 && name[at - 1] != '.')) continue;
    size_t i = at + prefix.size();
    int64_t layer = 0;
    const size_t digits = i;
    while (i < name.size() && std::isdigit(static_cast<unsigned char>(name[i])) &&
           i - digits < 9) {
      layer = layer * 10 + (name[i++] - '0');
    }
    if (i > digits && i < name.size() && name[i] == '.') return layer;
  }
  return std::nullopt;
}

}  // namespace

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
  spec->file_name = file_name;
  return Ok();
}

Status RefuseUnusedTensors(const ModelSpec& spec, std::span<const std::string> file_tensors,
                           const std::function<bool(std::string_view)>& read_otherwise,
                           std::string_view layer_key) {
  std::set<std::string, std::less<>> used;
  for (const auto& [name, view] : spec.weights) used.insert(spec.file_name(name));
  std::vector<std::string_view> unused;
  int64_t last_layer = -1;
  for (const std::string& name : file_tensors) {
    if (used.contains(name) || read_otherwise(name)) continue;
    unused.push_back(name);
    last_layer = std::max(last_layer, LayerIndex(name).value_or(-1));
  }
  if (unused.empty()) return Ok();
  std::string list;
  for (size_t i = 0; i < std::min(unused.size(), kListedTensors); ++i) {
    list += (i == 0 ? "" : ", ") + std::string(unused[i]);
  }
  if (unused.size() > kListedTensors) {
    list += " and " + std::to_string(unused.size() - kListedTensors) + " more";
  }
  const std::string layers = std::to_string(spec.n_layers);
  std::string why;
  if (last_layer >= spec.n_layers) {
    why = "the weights hold " + std::to_string(last_layer + 1) + " layers but " +
          std::string(layer_key) + " is " + layers;
  } else {
    why = "tensors a " + spec.architecture + " model of " + layers +
          " layers does not have (optional parts such as biases must be in every layer, block 0 "
          "included)";
  }
  return InvalidInput(spec.source + ": " + std::to_string(unused.size()) + " tensor" +
                      (unused.size() == 1 ? " is" : "s are") + " not used: " + list + "; " + why +
                      ". Kite reads a model completely or not at all");
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
    // More would let the tokenizer emit ids the model has no row for.
    return InvalidInput(src + ": the tokenizer has " + std::to_string(tokenizer_vocab) +
                        " tokens but the model's embedding has only " +
                        std::to_string(spec->vocab) + " rows");
  }
  if (tokenizer_vocab < spec->vocab) {
    // Common (rows padded to a multiple of 64 or 128); the session never samples those ids.
    spec->warnings.push_back(src + ": the tokenizer has " + std::to_string(tokenizer_vocab) +
                             " tokens, the embedding " + std::to_string(spec->vocab) +
                             " rows; ids " + std::to_string(tokenizer_vocab) + ".." +
                             std::to_string(spec->vocab - 1) +
                             " have no text and are never sampled");
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
