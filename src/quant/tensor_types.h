// The type of every tensor of a model being quantized: llama.cpp's mixture for the requested
// file type (export/weight_types.h, llama_tensor_get_type), or the type itself everywhere
// (--pure), then the user's choices in llama-quantize's order: --output-tensor-type,
// --token-embedding-type, and --override REGEX=TYPE (llama-quantize's --tensor-type: the first
// pattern found anywhere in the name wins). What the user names must fit: a pattern that
// matches no quantizable tensor, or a type whose blocks do not divide a tensor's rows, is an
// error naming the flag and the tensor; llama.cpp's own choices fall back silently as it does.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "export/weight_types.h"
#include "tensor/dtype.h"

namespace kite {

// A plain ggml type by name, any case ("q8_0", "Q4_K", "f16"), that Kite can write: InvalidInput
// naming `flag` and listing the valid names otherwise.
Result<DType> ParseGgmlType(std::string_view name, std::string_view flag);
std::vector<std::string> WritableGgmlTypeNames();

// --type: ExportTypeNames() in any case; `pure`: the type on every quantizable weight.
Result<ExportType> ParseQuantizeType(std::string_view name, bool pure);

// "REGEX=TYPE" (the last '=' splits): PCRE2 syntax, found anywhere in the tensor's name.
class TypeOverride {
 public:
  static Result<TypeOverride> Parse(std::string_view spec);
  const std::string& spec() const { return spec_; }
  DType dtype() const { return dtype_; }
  bool Matches(const std::string& name) const;

 private:
  struct Code;
  std::string spec_;
  DType dtype_ = DType::kF32;
  std::shared_ptr<const Code> code_;
};

struct TensorTypeOptions {
  ExportType type;
  std::optional<DType> output_type;     // output.weight (and a tied token_embd.weight)
  std::optional<DType> embedding_type;  // token_embd.weight
  std::vector<TypeOverride> overrides;
};

// One tensor as the source holds it.
struct SourceTensorInfo {
  std::string name;
  std::vector<int64_t> shape;  // outermost first
  DType stored = DType::kF32;  // kept for tensors llama.cpp does not quantize (norms, biases)
};

// A weight of a block ("blk.") that llama.cpp would quantize: the linears a size target or an
// NPU layout applies to, and the report's "block linears".
bool IsBlockLinear(const SourceTensorInfo& info);

struct TensorTypeChoice {
  DType dtype = DType::kF32;
  std::string reason;  // "mixture", "fallback from q4_K", "--override 'attn_v=q8_0'", ...
  double error = -1;   // the measured squared error when a budget chose it (quant/mix_search.h)
  // The user's --override chose it: a size target or an NPU layout leaves it as it is.
  bool pinned() const { return reason.starts_with("--override"); }
};

Result<std::vector<TensorTypeChoice>> ChooseTensorTypes(std::span<const SourceTensorInfo> tensors,
                                                        const TensorTypeContext& context,
                                                        const TensorTypeOptions& options);

}  // namespace kite
