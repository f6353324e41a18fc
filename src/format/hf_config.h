// Hugging Face config.json for the decoder-only architectures Kite builds with its llama graph:
// LlamaForCausalLM (Llama 2/3, TinyLlama, SmolLM), MistralForCausalLM, Qwen2ForCausalLM.
// Defaults are those of the transformers config classes; a key given as null counts as absent.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace kite {

struct HfRopeScaling {
  // "none", "linear" (positions divided by factor) or "llama3" (Llama 3.1's per-frequency
  // blend). "default" in a config means "none"; "dynamic", "yarn", "longrope" and others are
  // Unsupported errors.
  std::string type = "none";
  float factor = 1.0f;
  float low_freq_factor = 1.0f;                     // llama3 only
  float high_freq_factor = 4.0f;                    // llama3 only
  int64_t original_max_position_embeddings = 8192;  // llama3 only
};

struct HfConfig {
  std::string architecture;  // architectures[0], e.g. "LlamaForCausalLM"
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_hidden_layers = 0;
  int64_t num_attention_heads = 0;
  int64_t num_key_value_heads = 0;  // defaults to num_attention_heads; divides it
  int64_t head_dim = 0;             // defaults to hidden_size / num_attention_heads
  int64_t max_position_embeddings = 0;
  double rms_norm_eps = 0.0;
  double rope_theta = 10000.0;
  HfRopeScaling rope_scaling;
  bool tie_word_embeddings = false;  // lm_head shares embed_tokens' weight
  // Bias terms. Llama's "attention_bias" puts a bias on q, k, v and o, and "mlp_bias" on
  // gate, up and down; Qwen2 always has q, k, v biases and no others; Mistral has none.
  bool attention_bias = false;      // q_proj, k_proj, v_proj
  bool attention_out_bias = false;  // o_proj
  bool mlp_bias = false;            // gate_proj, up_proj, down_proj
  std::string hidden_act = "silu";  // recorded for the model builder, which decides
  // Attention sees only the last sliding_window positions (Mistral-7B-v0.1: 4096). Qwen2's
  // sliding window applies only when use_sliding_window is true, which Kite does not support.
  std::optional<int64_t> sliding_window;
  std::vector<int64_t> bos_token_ids;  // config may give an int or a list
  std::vector<int64_t> eos_token_ids;
  std::string torch_dtype;  // "bfloat16", ...; from "torch_dtype" or newer "dtype"; may be empty
};

// Parses config.json text; `path` names the file in messages. Missing or ill-typed fields and
// nonsense values are InvalidInput naming the field; an architecture or rope scaling Kite does
// not build is Unsupported, listing what it does build.
Result<HfConfig> ParseHfConfig(std::string_view json_text, const std::string& path);

// Reads `folder_or_file`/config.json when given a folder, else the file itself.
Result<HfConfig> LoadHfConfig(const std::string& folder_or_file);

}  // namespace kite
