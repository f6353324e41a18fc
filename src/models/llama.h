// The Llama family's decoder (Llama 2/3, Mistral, Qwen2, SmolLM): see models/llama.cpp. Qwen3
// and Phi-3 run on its builder (models/qwen3.h, models/phi3.h).
#pragma once

#include <memory>
#include <vector>

#include "models/architectures.h"

namespace kite {

// The tensors of a Llama-family model with `config`'s sizes and bias flags, in file order: the
// embedding, each block (with Qwen3's q/k norms when config.qk_norm), the final norm and
// (unless tied) lm_head.
std::vector<ExpectedTensor> LlamaTensors(const ModelConfig& config);

// The model whose graphs the Llama builder makes (for the architectures that share it).
std::unique_ptr<Model> CreateLlamaFamilyModel(ModelConfig config, WeightStore weights,
                                              Model::FileNames file_names);

// transformers' names of the Llama family's block weights.
extern const HfNamePart kLlamaHfParts[9];

extern const Architecture kLlamaArchitecture;

}  // namespace kite
