// What llama.cpp's convert_hf_to_gguf.py writes for a Llama-family model besides the tokenizer:
// the {arch}.* hyper-parameter keys, Llama 3 rope scaling as rope_freqs.weight, and the per-head
// q/k row permutation of arch "llama" (llama.cpp runs that arch's RoPE on adjacent pairs).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "format/gguf.h"

namespace kite {

struct LlamaGgufConfig {
  std::string arch = "llama";  // "llama" (Llama, Mistral, SmolLM) or "qwen2"
  std::string name;            // general.name
  int64_t n_layers = 0, context_length = 0, hidden = 0, ffn = 0;
  int64_t n_heads = 0, n_kv_heads = 0, head_dim = 0, vocab = 0;
  double rms_eps = 1e-5, rope_theta = 10000.0;
  std::string rope_scaling = "none";                     // "none", "linear" or "llama3"
  double rope_factor = 1.0;                              // linear and llama3
  double low_freq_factor = 1.0, high_freq_factor = 4.0;  // llama3
  int64_t original_context = 8192;                       // llama3
  uint32_t file_type = 0;  // llama.cpp's LLAMA_FTYPE (general.file_type)
};

// general.* and {arch}.* keys, as llama.cpp's converter names them.
void SetLlamaMetadata(const LlamaGgufConfig& config, GgufWriter* writer);

// rope_freqs.weight [head_dim / 2] for Llama 3 scaling: each pair's frequency divisor, computed
// as the converter does (frequencies in float32, the blend in double).
std::vector<float> Llama3RopeFreqs(const LlamaGgufConfig& config);

// The converter's permute(w, n_head): within each head of `head_dim` rows, row 2j + s of the
// result is row s * head_dim / 2 + j of the Hugging Face weight (s = 0, 1), which turns the
// rotate-half pairs (j, j + D/2) into adjacent rows. Returns the source row of `row`.
inline int64_t PermutedSourceRow(int64_t row, int64_t head_dim) {
  const int64_t head = row / head_dim, r = row % head_dim;
  return head * head_dim + (r % 2) * (head_dim / 2) + r / 2;
}

}  // namespace kite
