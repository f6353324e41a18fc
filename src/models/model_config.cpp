#include "models/model_config.h"

namespace kite {

Status ModelConfig::Check() const {
  auto positive = [&](const char* field, int64_t value) -> Status {
    if (value <= 0) {
      return InvalidInput(source + ": " + field + " is " + std::to_string(value) +
                          ", expected > 0");
    }
    return Ok();
  };
  KITE_RETURN_IF_ERROR(positive("layer count", n_layers));
  KITE_RETURN_IF_ERROR(positive("hidden size", hidden));
  KITE_RETURN_IF_ERROR(positive("head count", n_heads));
  KITE_RETURN_IF_ERROR(positive("kv head count", n_kv_heads));
  KITE_RETURN_IF_ERROR(positive("head dim", head_dim));
  KITE_RETURN_IF_ERROR(positive("feed-forward size", ffn));
  KITE_RETURN_IF_ERROR(positive("vocab size", vocab));
  KITE_RETURN_IF_ERROR(positive("context length", context_length));
  if (n_heads % n_kv_heads != 0) {
    return InvalidInput(source + ": " + std::to_string(n_heads) +
                        " attention heads are not a multiple of " + std::to_string(n_kv_heads) +
                        " kv heads");
  }
  if (!(rms_eps > 0.0f)) {
    return InvalidInput(source + ": rms norm epsilon " + std::to_string(rms_eps) +
                        ", expected > 0");
  }
  return Ok();
}

}  // namespace kite
