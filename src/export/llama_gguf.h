// What llama.cpp's convert_hf_to_gguf.py writes for a model besides the tokenizer: the {arch}.*
// hyper-parameter keys (the common ones here, each architecture's own from its file:
// Architecture::to_gguf), Llama 3 rope scaling as rope_freqs.weight, and the per-head q/k row
// permutation of arch "llama" (llama.cpp runs that arch's RoPE on adjacent pairs).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "format/gguf.h"
#include "models/model_config.h"

namespace kite {

// What a GGUF file says about itself beside the model's config.
struct LlamaGgufHeader {
  std::string arch = "llama";  // GgufArchOf(config): "llama" (Llama, Mistral, SmolLM), "qwen2", ...
  std::string name;            // general.name
  uint32_t file_type = 0;      // llama.cpp's LLAMA_FTYPE (general.file_type)
};

// general.* and {arch}.* keys of `config`, as llama.cpp's converter names them. Linear RoPE
// scaling is written as keys; Llama 3 scaling has none (llama.cpp reads rope_freqs.weight).
// The architecture's own keys follow (Architecture::to_gguf).
void SetLlamaMetadata(const ModelConfig& config, const LlamaGgufHeader& header,
                      GgufWriter* writer);

// The general.architecture llama.cpp gives `config`'s model ("llama" when its family has no
// GGUF name of its own).
std::string GgufArchOf(const ModelConfig& config);

// The tensors of a GGUF file that hold configuration (Llama 3's rope_freqs.weight, Phi-3's
// LongRoPE factors), before the weights.
std::vector<std::pair<std::string, std::vector<float>>> ConfigTensorsOf(const ModelConfig& config);

// rope_freqs.weight [head_dim / 2] for `config`'s Llama 3 scaling: each pair's frequency
// divisor, computed as the converter does (frequencies in float32, the blend in double).
std::vector<float> Llama3RopeFreqs(const ModelConfig& config);

// The converter's permute(w, n_head): within each head of `head_dim` rows, row 2j + s of the
// result is row s * head_dim / 2 + j of the Hugging Face weight (s = 0, 1), which turns the
// rotate-half pairs (j, j + D/2) into adjacent rows. Returns the source row of `row`.
inline int64_t PermutedSourceRow(int64_t row, int64_t head_dim) {
  const int64_t head = row / head_dim, r = row % head_dim;
  return head * head_dim + (r % 2) * (head_dim / 2) + r / 2;
}

}  // namespace kite
