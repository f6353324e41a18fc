// Hugging Face config.json of a decoder-only model: the fields' types, ranges and defaults (those
// of the transformers config classes; a key given as null counts as absent). Which architectures
// Kite builds, and what each makes of the keys whose meaning depends on it (bias keys, sliding
// window), is the models layer's to decide (models/hf_architectures.h).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace kite {

struct HfRopeScaling {
  // "none", "linear" (positions divided by factor), "llama3" (Llama 3.1's per-frequency blend)
  // or "longrope" (Phi-3's per-pair factors; its older name "su" reads as "longrope").
  // "default" in a config means "none"; "dynamic", "yarn" and others are Unsupported errors.
  std::string type = "none";
  float factor = 1.0f;
  float low_freq_factor = 1.0f;                     // llama3 only
  float high_freq_factor = 4.0f;                    // llama3 only
  int64_t original_max_position_embeddings = 8192;  // llama3 (and longrope when given there)
  std::vector<double> short_factor;                 // longrope only: one per rotary pair
  std::vector<double> long_factor;                  // longrope only
};

struct HfConfig {
  std::string path;          // the file read, for messages
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
  // Keys whose meaning depends on the architecture, as given (nullopt when absent or null).
  std::optional<bool> attention_bias;
  std::optional<bool> mlp_bias;
  std::optional<bool> use_sliding_window;
  std::optional<int64_t> sliding_window;  // 1 .. int32 max when given
  std::string hidden_act = "silu";        // recorded for the model builder, which decides
                                          // (Gemma's "hidden_activation" when given)
  // Keys of Gemma and Phi-3, as given (nullopt or empty when absent).
  std::optional<double> query_pre_attn_scalar;    // Gemma: attention scale = this^-½
  std::optional<double> attn_logit_softcapping;   // Gemma 2
  std::optional<double> final_logit_softcapping;  // Gemma 2
  std::optional<int64_t> sliding_window_pattern;  // Gemma 3: every Nth layer is global
  std::vector<std::string> layer_types;           // "sliding_attention" / "full_attention"
  std::optional<double> rope_local_base_freq;     // Gemma 3: the sliding layers' RoPE base
  double partial_rotary_factor = 1.0;             // Phi-3/4: share of head_dim that rotates
  std::optional<int64_t> original_max_position_embeddings;  // Phi-3: LongRoPE's switch point
  std::vector<int64_t> bos_token_ids;  // config may give an int or a list
  std::vector<int64_t> eos_token_ids;
  std::string torch_dtype;  // "bfloat16", ...; from "torch_dtype" or newer "dtype"; may be empty
};

// Called with architectures[0] and the file's path before any other field is read (another
// architecture's config names its fields differently, so "missing field" would mislead); its
// error is returned as is.
using HfArchitectureCheck =
    std::function<Status(const std::string& architecture, const std::string& path)>;

// Parses config.json text; `path` names the file in messages. Missing or ill-typed fields and
// nonsense values are InvalidInput naming the field; a rope scaling Kite does not implement is
// Unsupported, listing those it does.
Result<HfConfig> ParseHfConfig(std::string_view json_text, const std::string& path,
                               const HfArchitectureCheck& check_architecture = {});

// Reads `folder_or_file`/config.json when given a folder, else the file itself.
Result<HfConfig> LoadHfConfig(const std::string& folder_or_file,
                              const HfArchitectureCheck& check_architecture = {});

}  // namespace kite
