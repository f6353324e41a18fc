// Which ggml type each tensor of a Llama-family GGUF gets for a requested file type, following
// llama.cpp (src/llama-quant.cpp, llama_tensor_get_type): 1-D tensors (norms, biases,
// rope_freqs) stay F32; plain types apply to every 2-D weight (llama-quantize --pure); the
// mixtures ("q4_k_m", "q3_k_s", ...) follow llama.cpp's rules for their file type; a tensor whose
// rows are not a whole number of blocks falls back as llama.cpp's tensor_type_fallback does
// (Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0, else F16).
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
  bool mix = false;        // llama.cpp's rules for `file_type` apply (else `base` everywhere)
  uint32_t file_type = 0;  // llama.cpp's LLAMA_FTYPE, for general.file_type
};

// What llama.cpp's rules read besides the tensor itself.
struct TensorTypeContext {
  int64_t n_layers = 0;
  bool tied = false;  // no output.weight: token_embd.weight is also the output projection
  int64_t n_gqa = 1;  // query heads per key/value head
  bool has_imatrix = false;
};

// The types whose tensor/types row names a file type, in lower case, then llama.cpp's mixtures
// over the k-quants: "f32", "f16", "bf16", "q4_0", "q4_1", "q8_0", "q4_k", "q5_k", "q6_k",
// "q2_k", "q3_k_s", "q3_k_m", "q3_k_l", "q4_k_s", "q4_k_m", "q5_k_s", "q5_k_m" (those in
// `allowed`, all when empty). InvalidInput lists the valid names.
Result<ExportType> ParseExportType(std::string_view name,
                                   const std::vector<std::string>& allowed = {});
std::vector<std::string> ExportTypeNames();

// Whether llama.cpp quantizes tensor `name` at all: a 2-D (or more) ".weight" that is no norm.
bool QuantizableWeight(const std::string& name, const std::vector<int64_t>& shape);

// The block ("blk.N.") a tensor name belongs to, or -1.
int64_t LayerOfTensor(const std::string& name);

// llama.cpp's tensor_type_fallback when rows of `columns` are not whole blocks of `type`.
DType FallbackType(DType type, int64_t columns);

// llama_tensor_get_type for a dense Llama-family model: the type llama-quantize (without --pure)
// gives the quantizable weight `name` [shape] in a file of `file_type` whose default type is
// `base`, before the fallback for rows that are not whole blocks.
DType LlamaMixtureType(uint32_t file_type, DType base, const std::string& name,
                       const std::vector<int64_t>& shape, const TensorTypeContext& context);

// The stored type of tensor `name` [shape, outermost first] (fallback included).
DType ChooseTensorType(const ExportType& type, const std::string& name,
                       const std::vector<int64_t>& shape, const TensorTypeContext& context);
// The same in a model of `n_layers` blocks; `tied`: it has no output.weight.
DType ChooseTensorType(const ExportType& type, const std::string& name,
                       const std::vector<int64_t>& shape, int64_t n_layers, bool tied);

}  // namespace kite
