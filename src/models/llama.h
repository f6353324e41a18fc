// The Llama family's decoder (Llama 2/3, Mistral, Qwen2, SmolLM): see models/llama.cpp.
#pragma once

#include <vector>

#include "models/architectures.h"

namespace kite {

// The tensors of a Llama-family model with `config`'s sizes and bias flags, in file order: the
// embedding, each block, the final norm and (unless tied) lm_head.
std::vector<ExpectedTensor> LlamaTensors(const ModelConfig& config);

extern const Architecture kLlamaArchitecture;

}  // namespace kite
