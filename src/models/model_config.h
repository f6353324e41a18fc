// ModelConfig: a model's hyper-parameters, whatever file they came from. The one form that the
// Hugging Face config.json reader (models/hf_architectures.cpp), the GGUF loader, `kite convert`
// and the graph builders all use; RoPE is carried as the rope op's own attributes, so no loader
// or writer passes it through strings or enums of its own.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/status.h"
#include "graph/encoding.h"
#include "graph/ops.h"

namespace kite {

struct ModelConfig {
  // The architecture whose builder makes the graph (models/architectures.h): "llama" covers
  // Llama, Mistral and Qwen2.
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

  // InvalidInput naming the source and the field: sizes positive, heads dividing, epsilon > 0.
  Status Check() const;
};

}  // namespace kite
