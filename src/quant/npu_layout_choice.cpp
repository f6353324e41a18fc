#include "quant/npu_layout_choice.h"

#include <algorithm>
#include <cctype>

namespace kite {

Result<const NpuWeightType*> NpuLayoutOf(const QuantizeModelOptions& options) {
  std::string name = options.type;
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (options.group != 0) {
    if (options.group != 32 && options.group != 64 && options.group != 128) {
      return InvalidInput("--group " + std::to_string(options.group) +
                          ": expected 32, 64 or 128 (group-wise int4)");
    }
    if (name != "int4" && name != "int4-asym") {
      return InvalidInput("--group applies to --type int4 or int4-asym (group-wise int4), not " +
                          options.type);
    }
    name = "int4-g" + std::to_string(options.group) + (name == "int4-asym" ? "-asym" : "");
  }
  return FindNpuWeightType(name);
}

bool TakesNpuLayout(const SourceTensorInfo& info, const TensorTypeChoice& choice,
                    const NpuWeightType& layout, const QuantizeModelOptions& options) {
  const bool head = info.name == "output.weight" && options.output_tensor_type.empty();
  if (!(IsBlockLinear(info) || head) || choice.pinned() || info.shape.size() != 2) {
    return false;
  }
  const int64_t columns = info.shape.back();
  if (layout.block > 0 && columns % layout.block != 0) return false;
  return layout.bits != 4 || columns % 2 == 0;
}

}  // namespace kite
