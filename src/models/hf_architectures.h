// What a Hugging Face config.json (format/hf_config.h, parsed without knowing architectures)
// means for Kite: which `architectures[0]` it builds, with which graph family, and how each spells
// the parts that differ between them (bias keys, sliding window, activation). The Llama family
// covers LlamaForCausalLM (Llama 2/3, TinyLlama, SmolLM), MistralForCausalLM and
// Qwen2ForCausalLM; Qwen3ForCausalLM, Phi3ForCausalLM, Gemma2ForCausalLM and Gemma3ForCausalLM
// have their own graph families, whose files read their own keys (Architecture::from_hf).
#pragma once

#include "base/status.h"
#include "format/hf_config.h"
#include "models/model_config.h"

namespace kite {

// Unsupported naming `path`, `architecture` and the architectures Kite builds, unless it builds
// this one. Pass it to ParseHfConfig / LoadHfConfig, which call it before reading other fields.
Status CheckHfArchitecture(const std::string& architecture, const std::string& path);

// The model config of a parsed config.json; `source` is left for the caller. Errors name
// `hf.path`: an architecture, activation, rope scaling or sliding window Kite does not build is
// Unsupported (listing the architectures it builds).
Result<ModelConfig> ModelConfigFromHf(const HfConfig& hf);

// `folder_or_file`'s config.json read and mapped (LoadHfConfig with CheckHfArchitecture, then
// ModelConfigFromHf).
Result<ModelConfig> LoadHfModelConfig(const std::string& folder_or_file);

}  // namespace kite
