// ModelConfig: a model's hyper-parameters, whatever file they came from. The one form that the
// Hugging Face config.json reader (models/hf_architectures.cpp), the GGUF loader, `kite convert`
// and the graph builders all use; RoPE is carried as the rope op's own attributes, so no loader
// or writer passes it through strings or enums of its own.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "graph/encoding.h"
#include "graph/ops.h"
#include "models/compiled_target.h"

namespace kite {

struct ModelConfig {
  // The architecture whose builder makes the graph (models/architectures.h): "llama" covers
  // Llama, Mistral and Qwen2; "qwen3", "phi3" and "gemma" (Gemma 2 and 3) have their own files.
  std::string family = "llama";
  std::string architecture;  // as the file names it: "LlamaForCausalLM", GGUF "qwen2", ...
  std::string source;        // the path it was loaded from

  int32_t n_layers = 0;
  int32_t hidden = 0;
  int32_t n_heads = 0;
  int32_t n_kv_heads = 0;  // divides n_heads (grouped-query attention)
  int32_t head_dim = 0;
  int32_t ffn = 0;    // SwiGLU inner size
  int32_t vocab = 0;  // rows of the embedding (and of lm_head)
  float rms_eps = 1e-5f;
  // Mode: kNeox for HF weights and GGUF qwen2; kInterleaved for GGUF llama, whose q/k rows
  // llama.cpp's converter permuted.
  RopeAttrs rope;
  int32_t context_length = 0;    // positions the model was trained for
  int32_t sliding_window = 0;    // 0: attention sees the whole context
  // With a sliding window: 0, every layer slides (Mistral, Phi-3); N > 0, layer l is global
  // (sees the whole context) when (l + 1) % N == 0 and slides otherwise (Gemma 2: 2, Gemma 3: 6).
  int32_t sliding_window_pattern = 0;
  // The sliding layers' RoPE when it differs from `rope` (Gemma 3: base 10000, no scaling).
  std::optional<RopeAttrs> rope_sliding;
  // LongRoPE (Phi-3): `rope` holds the short factors as divisors (and rope.original_max_position
  // the original context); these are the long ones, used when a run's context exceeds it.
  std::vector<float> rope_long_factors;
  bool qk_norm = false;          // RMSNorm over each q and k head before RoPE (Qwen3, Gemma 3)
  float embedding_scale = 1.0f;  // embeddings × this (Gemma: √hidden)
  float attention_scale = 0.0f;  // softmax scale; 0: 1/√head_dim (Gemma: query_pre_attn_scalar^-½)
  float attn_softcap = 0.0f;     // attention scores c·tanh(s/c) (Gemma 2); 0: none
  float final_softcap = 0.0f;    // the same on the logits (Gemma 2); 0: none
  bool tied_embeddings = false;  // lm_head is token_embd.weight (no output.weight)
  bool q_bias = false, k_bias = false, v_bias = false, o_bias = false;
  bool mlp_bias = false;  // gate, up and down
  // End-of-text ids the config itself names (config.json eos_token_id), each below vocab. The
  // tokenizer's are joined to them where model and tokenizer meet (runtime/model_files.h).
  std::vector<int32_t> eos_ids;
  // Static activation encodings by node name (kite.activations.* of a quantized GGUF,
  // models/activation_encodings_gguf.h); empty for a float model. The Engine runs them
  // (graph/passes/insert_qdq.h) unless told not to.
  std::map<std::string, QuantEncoding> activation_encodings;
  // Set for a file `kite compile` wrote (kite.compile.*, models/compiled_gguf.h): the Engine
  // refuses to run it for another chip and sizes its context from the compiled ones.
  std::optional<CompiledTarget> compiled;

  // InvalidInput naming the source and the field: sizes positive, heads dividing, epsilon > 0.
  Status Check() const;

  // Whether `layer` attends through the sliding window (see sliding_window_pattern).
  bool IsSlidingLayer(int32_t layer) const {
    if (sliding_window <= 0) return false;
    return sliding_window_pattern <= 0 || (layer + 1) % sliding_window_pattern != 0;
  }
  // The RoPE of `layer`, and of a run whose context reaches `context` positions (LongRoPE's
  // long factors past rope.original_max_position).
  RopeAttrs RopeOf(int32_t layer, int32_t context) const;
};

}  // namespace kite
