#include "models/gguf_keys.h"

#include <cstring>

namespace kite {

Result<std::vector<float>> ReadConfigTensor(const GgufFile& gguf, const std::string& name,
                                            int64_t n) {
  const std::string what = gguf.name() + ": tensor '" + name + "'";
  const GgufTensorInfo* info = gguf.FindTensor(name);
  if (info == nullptr) return NotFound(what + " is missing");
  if (info->dtype != DType::kF32 || info->shape.size() != 1) {
    return InvalidInput(what + " is " + ShapeString(info->shape) + " " +
                        std::string(DTypeName(info->dtype)) + ", expected [" + std::to_string(n) +
                        "] f32");
  }
  if (info->shape[0] != n) {
    return InvalidInput(what + " has " + std::to_string(info->shape[0]) +
                        " entries, expected one per rotary pair (" + std::to_string(n) + ")");
  }
  const TensorView view = gguf.View(*info);
  std::vector<float> values(n);
  std::memcpy(values.data(), view.data, values.size() * sizeof(float));
  for (int64_t i = 0; i < n; ++i) {
    if (!std::isfinite(values[i]) || !(values[i] > 0.0f)) {
      return InvalidInput(what + "[" + std::to_string(i) + "] is " + std::to_string(values[i]) +
                          ", expected a finite value > 0");
    }
  }
  return values;
}

}  // namespace kite
