// A Hugging Face model folder -> Model: config.json (format/hf_config.h) and the safetensors
// weights under their transformers names (the tokenizer files are read beside it by the
// runtime). HF checkpoints keep q/k in the rotate-half layout, so RoPE runs in neox mode.
#include <array>
#include <string>
#include <string_view>

#include "format/hf_config.h"
#include "format/safetensors.h"
#include "models/load_model.h"

namespace kite {

namespace {

constexpr std::array<std::string_view, 3> kSupported = {"LlamaForCausalLM", "MistralForCausalLM",
                                                        "Qwen2ForCausalLM"};

// transformers' parameter name of a canonical (GGUF-style) weight name.
std::string HfName(const std::string& canonical) {
  static constexpr std::pair<std::string_view, std::string_view> kBlockParts[] = {
      {"attn_norm.weight", "input_layernorm.weight"},
      {"attn_q.", "self_attn.q_proj."},
      {"attn_k.", "self_attn.k_proj."},
      {"attn_v.", "self_attn.v_proj."},
      {"attn_output.", "self_attn.o_proj."},
      {"ffn_norm.weight", "post_attention_layernorm.weight"},
      {"ffn_gate.", "mlp.gate_proj."},
      {"ffn_up.", "mlp.up_proj."},
      {"ffn_down.", "mlp.down_proj."},
  };
  if (canonical == "token_embd.weight") return "model.embed_tokens.weight";
  if (canonical == "output_norm.weight") return "model.norm.weight";
  if (canonical == "output.weight") return "lm_head.weight";
  if (canonical.starts_with("blk.")) {
    const size_t dot = canonical.find('.', 4);  // after the layer number
    const std::string layer = canonical.substr(4, dot - 4);
    const std::string_view rest = std::string_view(canonical).substr(dot + 1);
    for (const auto& [gguf_part, hf_part] : kBlockParts) {
      if (rest.starts_with(gguf_part)) {
        return "model.layers." + layer + "." + std::string(hf_part) +
               std::string(rest.substr(gguf_part.size()));
      }
    }
  }
  return canonical;
}

Status SetRope(const HfConfig& hf, RopeAttrs* rope) {
  rope->mode = RopeMode::kNeox;
  rope->theta = static_cast<float>(hf.rope_theta);
  rope->rotary_dim = static_cast<int32_t>(hf.head_dim);
  const std::string& type = hf.rope_scaling.type;
  rope->factor = hf.rope_scaling.factor;
  if (type == "none") {
    rope->scaling = RopeScaling::kNone;
  } else if (type == "linear") {
    rope->scaling = RopeScaling::kLinear;
  } else if (type == "llama3") {
    rope->scaling = RopeScaling::kLlama3;
    rope->low_freq_factor = hf.rope_scaling.low_freq_factor;
    rope->high_freq_factor = hf.rope_scaling.high_freq_factor;
    rope->original_max_position =
        static_cast<int32_t>(hf.rope_scaling.original_max_position_embeddings);
  } else {
    return Unsupported("rope_scaling type '" + type + "' (supported: linear, llama3)");
  }
  return Ok();
}

}  // namespace

Result<std::unique_ptr<Model>> LoadHfModel(const std::string& folder) {
  const HfConfig hf = KITE_TRY(LoadHfConfig(folder));
  bool supported = false;
  std::string names;
  for (std::string_view name : kSupported) {
    supported |= hf.architecture == name;
    names += (names.empty() ? "" : ", ") + std::string(name);
  }
  if (!supported) {
    return Unsupported(folder + ": architecture '" + hf.architecture +
                       "' is not supported (supported: " + names + ")");
  }

  ModelConfig config;
  config.family = "llama";
  config.architecture = hf.architecture;
  config.source = folder;
  // config.json sizes were checked against int32 range by ParseHfConfig.
  config.n_layers = static_cast<int32_t>(hf.num_hidden_layers);
  config.hidden = static_cast<int32_t>(hf.hidden_size);
  config.n_heads = static_cast<int32_t>(hf.num_attention_heads);
  config.n_kv_heads = static_cast<int32_t>(hf.num_key_value_heads);
  config.head_dim = static_cast<int32_t>(hf.head_dim);
  config.ffn = static_cast<int32_t>(hf.intermediate_size);
  config.vocab = static_cast<int32_t>(hf.vocab_size);
  config.rms_eps = static_cast<float>(hf.rms_norm_eps);
  config.context_length = static_cast<int32_t>(hf.max_position_embeddings);
  config.sliding_window = static_cast<int32_t>(hf.sliding_window.value_or(0));
  config.tied_embeddings = hf.tie_word_embeddings;
  config.q_bias = config.k_bias = config.v_bias = hf.attention_bias;
  config.o_bias = hf.attention_out_bias;
  config.mlp_bias = hf.mlp_bias;
  if (hf.hidden_act != "silu") {
    return Unsupported(folder + ": hidden_act '" + hf.hidden_act +
                       "' (the Llama family's SwiGLU needs silu)");
  }
  auto rope = SetRope(hf, &config.rope);
  if (!rope) return std::unexpected(std::move(rope.error()).WithContext(folder + "/config.json"));

  for (int64_t id : hf.eos_token_ids) {
    if (id < config.vocab) config.eos_ids.push_back(static_cast<int32_t>(id));
  }
  KITE_RETURN_IF_ERROR(config.Check());
  const Architecture* architecture = KITE_TRY(FindArchitecture(config));

  auto files =
      std::make_shared<const SafetensorsModel>(KITE_TRY(SafetensorsModel::OpenFolder(folder)));
  const SafetensorsModel& weights = *files;
  WeightStore store;
  KITE_RETURN_IF_ERROR(BindWeights(
      config, architecture->tensors(config),
      [&](const std::string& name) -> Result<std::optional<TensorView>> {
        const std::string hf_name = HfName(name);
        if (weights.Find(hf_name) == nullptr) return std::optional<TensorView>();
        return std::optional<TensorView>(KITE_TRY(weights.GetTensor(hf_name)));
      },
      HfName, &store));
  std::vector<std::string> file_tensors;
  for (const SafetensorsModel::Entry& entry : weights.tensors()) {
    file_tensors.push_back(entry.tensor->name);
  }
  const bool tied = config.tied_embeddings;
  KITE_RETURN_IF_ERROR(RefuseUnusedTensors(
      config, store, HfName, file_tensors,
      [tied](std::string_view name) {
        // Older transformers releases saved RoPE's inverse frequencies as a buffer in every layer
        // (model.layers.N.self_attn.rotary_emb.inv_freq); Kite computes them from rope_theta
        // and rope_scaling, as transformers itself does when loading.
        if (name.ends_with(".rotary_emb.inv_freq")) return true;
        // With tie_word_embeddings some checkpoints still store lm_head.weight; transformers
        // ties it to model.embed_tokens.weight after loading, so the stored copy is never used.
        return tied && name == "lm_head.weight";
      },
      "config.json num_hidden_layers"));

  store.Keep(std::move(files));
  return architecture->create(std::move(config), std::move(store), HfName);
}

}  // namespace kite
