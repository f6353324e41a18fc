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
  if (sliding_window < 0 || sliding_window_pattern < 0) {
    return InvalidInput(source + ": sliding window " + std::to_string(sliding_window) +
                        " or its layer pattern " + std::to_string(sliding_window_pattern) +
                        " is negative");
  }
  if (!rope_long_factors.empty() &&
      static_cast<int32_t>(rope_long_factors.size()) != rope.rotary_dim / 2) {
    return InvalidInput(source + ": " + std::to_string(rope_long_factors.size()) +
                        " LongRoPE long factors, expected one per rotary pair (" +
                        std::to_string(rope.rotary_dim / 2) + ")");
  }
  return Ok();
}

RopeAttrs ModelConfig::RopeOf(int32_t layer, int32_t context) const {
  if (rope_sliding && IsSlidingLayer(layer)) return *rope_sliding;
  if (!rope_long_factors.empty() && context > rope.original_max_position) {
    RopeAttrs long_rope = rope;
    long_rope.divisors = rope_long_factors;
    return long_rope;
  }
  return rope;
}

}  // namespace kite
