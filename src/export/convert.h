// `kite convert`: a Hugging Face folder (every architecture models/hf_architectures.h reads)
// -> the GGUF file llama.cpp's convert_hf_to_gguf.py would make of it: its metadata keys and
// tensor names, q/k rows permuted for arch "llama", Llama 3 rope scaling as rope_freqs.weight,
// Gemma's norms as 1 + w, Phi-3's LongRoPE factors as rope_factors_long/short.weight,
// tied embeddings as a missing output.weight, the tokenizer and chat template inside. 2-D
// weights are stored in the requested float type; norms, biases and other 1-D tensors stay F32.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "export/gguf_stream.h"
#include "models/model.h"

namespace kite {

struct ConvertOptions {
  std::string type = "f16";  // f32, f16 or bf16
  WriteProgress progress;    // optional
};

// The GGUF a folder converts to, before anything is written: its metadata (general.*, {arch}.*,
// tokenizer.*) and its tensors in file order, each stored as `choose(name, shape)` gives (1-D
// tensors always F32). The tensors read the model's weights: keep `model` alive while they fill.
struct HfGgufSource {
  std::unique_ptr<Model> model;
  GgufWriter metadata;
  std::vector<StreamedTensor> tensors;
  // The q/k rows of `tensors` are permuted per head of this many rows (arch "llama",
  // PermutedSourceRow); `model`'s are not. 0: no permutation.
  int64_t qk_permute_head_dim = 0;
};
using ChooseStoredType =
    std::function<DType(const std::string& name, const std::vector<int64_t>& shape)>;
// `path`: an HF folder, or an .onnx file (models/onnx_import.h) with its tokenizer beside it.
Result<HfGgufSource> ReadHfAsGguf(const std::string& path, uint32_t file_type,
                                  const ChooseStoredType& choose);

Status ConvertHfToGguf(const std::string& path, const std::string& out_path,
                       const ConvertOptions& options);

}  // namespace kite
