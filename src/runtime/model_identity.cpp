#include "runtime/model_identity.h"

#include "base/hash.h"

namespace kite {

uint64_t ModelIdentity(const Model& model) {
  const ModelConfig& spec = model.config();
  uint64_t hash = Fnv1aString(spec.architecture);
  for (int32_t v : {spec.n_layers, spec.hidden, spec.n_heads, spec.n_kv_heads, spec.head_dim,
                    spec.ffn, spec.vocab}) {
    hash = Fnv1a(&v, sizeof v, hash);
  }
  constexpr uint64_t kWindows = 16, kWindow = 4096;
  for (const auto& [name, view] : model.weights().weights()) {
    hash = Fnv1aString(name, hash);
    hash = Fnv1aString(DTypeName(view.dtype), hash);
    for (int64_t dim : view.shape) hash = Fnv1a(&dim, sizeof dim, hash);
    const auto* data = static_cast<const uint8_t*>(view.data);
    if (view.bytes <= kWindows * kWindow) {
      hash = Fnv1a(data, view.bytes, hash);
      continue;
    }
    const uint64_t step = (view.bytes - kWindow) / (kWindows - 1);
    for (uint64_t w = 0; w < kWindows; ++w) hash = Fnv1a(data + w * step, kWindow, hash);
  }
  return hash;
}

}  // namespace kite
