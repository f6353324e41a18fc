// Which ggml type each tensor of a Llama-family GGUF gets for a requested file type, following
// llama.cpp (src/llama-quant.cpp, llama_tensor_get_type): 1-D tensors (norms, biases,
// rope_freqs) stay F32; plain types apply to every 2-D weight (llama-quantize --pure); "q4_k_m"
// is llama.cpp's mix; a tensor whose rows are not a whole number of blocks falls back as
// llama.cpp's tensor_type_fallback does (Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0, else F16).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "tensor/dtype.h"

namespace kite {

struct ExportType {
  std::string name;  // as given: "f16", "q4_k_m", ...
  DType base = DType::kF32;
  bool q4_k_m = false;     // llama.cpp's Q4_K_M mix over base Q4_K
  uint32_t file_type = 0;  // llama.cpp's LLAMA_FTYPE, for general.file_type
};

// The types whose tensor/types row names a file type, in lower case, then "q4_k_m": "f32",
// "f16", "bf16", "q4_0", "q4_1", "q8_0", "q4_k", "q5_k", "q6_k", "q4_k_m" (those in `allowed`,
// all when empty). InvalidInput lists the valid names.
Result<ExportType> ParseExportType(std::string_view name,
                                   const std::vector<std::string>& allowed = {});
std::vector<std::string> ExportTypeNames();

// The stored type of tensor `name` [shape, outermost first] in a model of `n_layers` blocks;
// `tied`: the model has no output.weight, so token_embd.weight is also the output projection.
DType ChooseTensorType(const ExportType& type, const std::string& name,
                       const std::vector<int64_t>& shape, int64_t n_layers, bool tied);

}  // namespace kite
