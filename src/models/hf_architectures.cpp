#include "models/hf_architectures.h"

#include <array>
#include <string>
#include <string_view>

#include "models/architectures.h"

namespace kite {

namespace {

// How each architecture spells the parts that differ between them.
enum class BiasRule {
  kLlamaKeys,  // "attention_bias" (q, k, v, o) and "mlp_bias" keys, both default false
  kQkvOnly,    // Qwen2: q, k, v biases always, no o or MLP bias
  kNone,       // Mistral: none (a stray key changes nothing)
};
enum class WindowRule {
  kNone,         // no sliding window
  kKey,          // "sliding_window": attention sees only that many last positions (Mistral 4096)
  kWhenEnabled,  // "sliding_window" counts only when "use_sliding_window" is true (Qwen2), which
                 // Kite does not support
};
struct HfArchitecture {
  std::string_view name;
  std::string_view family;  // the graph builder (models/architectures.h)
  BiasRule bias;
  WindowRule window;
  std::string_view activation;  // the hidden_act its feed-forward computes
};

constexpr std::array kHfArchitectures = {
    HfArchitecture{"LlamaForCausalLM", "llama", BiasRule::kLlamaKeys, WindowRule::kNone, "silu"},
    HfArchitecture{"MistralForCausalLM", "llama", BiasRule::kNone, WindowRule::kKey, "silu"},
    HfArchitecture{"Qwen2ForCausalLM", "llama", BiasRule::kQkvOnly, WindowRule::kWhenEnabled,
                   "silu"},
    HfArchitecture{"Qwen3ForCausalLM", "qwen3", BiasRule::kLlamaKeys, WindowRule::kWhenEnabled,
                   "silu"},
    HfArchitecture{"Phi3ForCausalLM", "phi3", BiasRule::kNone, WindowRule::kKey, "silu"},
    HfArchitecture{"Gemma2ForCausalLM", "gemma", BiasRule::kLlamaKeys, WindowRule::kKey,
                   "gelu_pytorch_tanh"},
    HfArchitecture{"Gemma3ForCausalLM", "gemma", BiasRule::kLlamaKeys, WindowRule::kKey,
                   "gelu_pytorch_tanh"},
};

Result<const HfArchitecture*> FindHfArchitecture(const std::string& name, const std::string& path) {
  std::string supported;
  for (const HfArchitecture& architecture : kHfArchitectures) {
    if (architecture.name == name) return &architecture;
    supported += (supported.empty() ? "" : ", ") + std::string(architecture.name);
  }
  return Unsupported(path + ": architecture '" + name +
                     "' is not supported (supported: " + supported + ")");
}

// HF checkpoints keep q/k in the rotate-half layout, so RoPE runs in neox mode. LongRoPE is the
// architecture's to read (models/phi3.cpp).
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
  } else if (type != "longrope") {
    return Unsupported(hf.path + ": rope_scaling type '" + type + "' (supported: linear, llama3)");
  }
  return Ok();
}

}  // namespace

Status CheckHfArchitecture(const std::string& architecture, const std::string& path) {
  auto found = FindHfArchitecture(architecture, path);
  if (!found) return std::unexpected(std::move(found.error()));
  return Ok();
}

Result<ModelConfig> LoadHfModelConfig(const std::string& folder_or_file) {
  return ModelConfigFromHf(KITE_TRY(LoadHfConfig(folder_or_file, CheckHfArchitecture)));
}

Result<ModelConfig> ModelConfigFromHf(const HfConfig& hf) {
  const HfArchitecture& architecture = *KITE_TRY(FindHfArchitecture(hf.architecture, hf.path));
  ModelConfig config;
  config.family = std::string(architecture.family);
  config.architecture = hf.architecture;
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
  config.tied_embeddings = hf.tie_word_embeddings;
  switch (architecture.bias) {
    case BiasRule::kLlamaKeys:
      config.q_bias = config.k_bias = config.v_bias = config.o_bias =
          hf.attention_bias.value_or(false);
      config.mlp_bias = hf.mlp_bias.value_or(false);
      break;
    case BiasRule::kQkvOnly:
      config.q_bias = config.k_bias = config.v_bias = true;
      break;
    case BiasRule::kNone:
      break;
  }
  switch (architecture.window) {
    case WindowRule::kNone:
      break;
    case WindowRule::kKey:
      config.sliding_window = static_cast<int32_t>(hf.sliding_window.value_or(0));
      break;
    case WindowRule::kWhenEnabled:
      if (hf.use_sliding_window.value_or(false)) {
        return Unsupported(hf.path + ": use_sliding_window true is not supported for " +
                           hf.architecture);
      }
      break;
  }
  if (hf.hidden_act != architecture.activation) {
    return Unsupported(hf.path + ": hidden_act '" + hf.hidden_act + "' (" + hf.architecture +
                       "'s feed-forward computes " + std::string(architecture.activation) + ")");
  }
  KITE_RETURN_IF_ERROR(SetRope(hf, &config.rope));
  const Architecture* graph = FindFamily(config.family);
  if (graph != nullptr && graph->from_hf != nullptr) {
    KITE_RETURN_IF_ERROR(graph->from_hf(hf, &config));
  } else if (hf.rope_scaling.type == "longrope") {
    return Unsupported(hf.path + ": rope_scaling type 'longrope' for " + hf.architecture +
                       " (Kite reads it for Phi3ForCausalLM)");
  }
  for (int64_t id : hf.eos_token_ids) {
    if (id < config.vocab) config.eos_ids.push_back(static_cast<int32_t>(id));
  }
  return config;
}

}  // namespace kite
