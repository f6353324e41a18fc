// `kite convert`: a Hugging Face folder (LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM)
// -> the GGUF file llama.cpp's convert_hf_to_gguf.py would make of it: its metadata keys and
// tensor names, q/k rows permuted for arch "llama", Llama 3 rope scaling as rope_freqs.weight,
// tied embeddings as a missing output.weight, the tokenizer and chat template inside. 2-D
// weights are stored in the requested float type; norms, biases and other 1-D tensors stay F32.
#pragma once

#include <string>

#include "base/status.h"
#include "export/gguf_stream.h"

namespace kite {

struct ConvertOptions {
  std::string type = "f16";  // f32, f16 or bf16
  WriteProgress progress;    // optional
};

Status ConvertHfToGguf(const std::string& folder, const std::string& out_path,
                       const ConvertOptions& options);

}  // namespace kite
