// A Hugging Face model folder -> ModelSpec: config.json (format/hf_config.h), the safetensors
// weights under their transformers names, and the tokenizer files. HF checkpoints keep q/k in
// the rotate-half layout, so RoPE runs in neox mode.
#include <array>
#include <string>
#include <string_view>

#include "format/hf_config.h"
#include "format/safetensors.h"
#include "models/model_spec.h"

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

Status SetRope(const HfConfig& config, RopeSpec* rope) {
  rope->mode = RopeSpec::Mode::kNeox;
  rope->theta = static_cast<float>(config.rope_theta);
  rope->rotary_dim = static_cast<int32_t>(config.head_dim);
  const std::string& type = config.rope_scaling.type;
  rope->factor = config.rope_scaling.factor;
  if (type == "none") {
    rope->scaling = RopeSpec::Scaling::kNone;
  } else if (type == "linear") {
    rope->scaling = RopeSpec::Scaling::kLinear;
  } else if (type == "llama3") {
    rope->scaling = RopeSpec::Scaling::kLlama3;
    rope->low_freq_factor = config.rope_scaling.low_freq_factor;
    rope->high_freq_factor = config.rope_scaling.high_freq_factor;
    rope->original_max_position =
        static_cast<int32_t>(config.rope_scaling.original_max_position_embeddings);
  } else {
    return Unsupported("rope_scaling type '" + type + "' (supported: linear, llama3)");
  }
  return Ok();
}

}  // namespace

Result<ModelSpec> LoadHfModel(const std::string& folder) {
  const HfConfig config = KITE_TRY(LoadHfConfig(folder));
  bool supported = false;
  std::string names;
  for (std::string_view name : kSupported) {
    supported |= config.architecture == name;
    names += (names.empty() ? "" : ", ") + std::string(name);
  }
  if (!supported) {
    return Unsupported(folder + ": architecture '" + config.architecture +
                       "' is not supported (supported: " + names + ")");
  }

  ModelSpec spec;
  spec.family = "llama";
  spec.architecture = config.architecture;
  spec.source = folder;
  // config.json sizes were checked against int32 range by ParseHfConfig.
  spec.n_layers = static_cast<int32_t>(config.num_hidden_layers);
  spec.hidden = static_cast<int32_t>(config.hidden_size);
  spec.n_heads = static_cast<int32_t>(config.num_attention_heads);
  spec.n_kv_heads = static_cast<int32_t>(config.num_key_value_heads);
  spec.head_dim = static_cast<int32_t>(config.head_dim);
  spec.ffn = static_cast<int32_t>(config.intermediate_size);
  spec.vocab = static_cast<int32_t>(config.vocab_size);
  spec.rms_eps = static_cast<float>(config.rms_norm_eps);
  spec.context_length = static_cast<int32_t>(config.max_position_embeddings);
  spec.sliding_window = static_cast<int32_t>(config.sliding_window.value_or(0));
  spec.tied_embeddings = config.tie_word_embeddings;
  spec.q_bias = spec.k_bias = spec.v_bias = config.attention_bias;
  spec.o_bias = config.attention_out_bias;
  spec.mlp_bias = config.mlp_bias;
  if (config.hidden_act != "silu") {
    return Unsupported(folder + ": hidden_act '" + config.hidden_act +
                       "' (the Llama family's SwiGLU needs silu)");
  }
  auto rope = SetRope(config, &spec.rope);
  if (!rope) return std::unexpected(std::move(rope.error()).WithContext(folder + "/config.json"));

  spec.safetensors =
      std::make_unique<SafetensorsModel>(KITE_TRY(SafetensorsModel::OpenFolder(folder)));
  const SafetensorsModel& weights = *spec.safetensors;
  KITE_RETURN_IF_ERROR(BindWeights(
      &spec,
      [&](const std::string& name) -> Result<std::optional<TensorView>> {
        const std::string hf_name = HfName(name);
        if (weights.Find(hf_name) == nullptr) return std::optional<TensorView>();
        return std::optional<TensorView>(KITE_TRY(weights.GetTensor(hf_name)));
      },
      HfName));
  std::vector<std::string> file_tensors;
  for (const SafetensorsModel::Entry& entry : weights.tensors()) {
    file_tensors.push_back(entry.tensor->name);
  }
  const bool tied = spec.tied_embeddings;
  KITE_RETURN_IF_ERROR(RefuseUnusedTensors(
      spec, file_tensors,
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

  spec.tokenizer = KITE_TRY(Tokenizer::Load(folder));
  KITE_RETURN_IF_ERROR(FinishSpec(&spec, config.eos_token_ids));
  return spec;
}

}  // namespace kite
