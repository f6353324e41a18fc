// Session::Save / Session::Load: a session's history and KV cache rows as a GGUF file.
//   kite.session.version        u32   1
//   kite.session.fingerprint    u32   hash of the model's shape and first weight bytes
//   kite.session.{n_layers, n_kv_heads, head_dim, vocab}  u32
//   kite.session.kv_type        str   "f16" / "f32" / "q8_0"
//   history                     i32   [n_past]
//   blk.N.k, blk.N.v            kv    [n_past, n_kv_heads, head_dim]   (when the cache held them;
//                                     q8_0: the cache rows as they stand, blocks along head_dim)
// Without the KV tensors (or with another KV type) Load feeds the history again.
#include <cstring>
#include <string>
#include <vector>

#include "format/gguf.h"
#include "runtime/session.h"

namespace kite {

namespace {

constexpr uint32_t kSessionVersion = 1;

// FNV-1a over the model's shape and the first bytes of its embedding and final norm, so that a
// session is not restored into another model of the same shape.
uint32_t ModelFingerprint(const ModelSpec& spec) {
  uint32_t hash = 2166136261u;
  auto mix = [&](const void* data, size_t bytes) {
    const auto* p = static_cast<const uint8_t*>(data);
    for (size_t i = 0; i < bytes; ++i) hash = (hash ^ p[i]) * 16777619u;
  };
  for (int32_t v : {spec.n_layers, spec.hidden, spec.n_heads, spec.n_kv_heads, spec.head_dim,
                    spec.ffn, spec.vocab}) {
    mix(&v, sizeof v);
  }
  for (const char* name : {"token_embd.weight", "output_norm.weight"}) {
    auto it = spec.weights.find(name);
    if (it != spec.weights.end()) mix(it->second.data, std::min<uint64_t>(it->second.bytes, 4096));
  }
  return hash;
}

}  // namespace

Status Session::Save(const std::string& path) const {
  const ModelSpec& spec = engine_.spec();
  const KvCacheConfig& kv = engine_.kv_cache().config();
  GgufWriter writer;
  writer.SetUint32("kite.session.version", kSessionVersion);
  writer.SetUint32("kite.session.fingerprint", ModelFingerprint(spec));
  writer.SetUint32("kite.session.n_layers", static_cast<uint32_t>(spec.n_layers));
  writer.SetUint32("kite.session.n_kv_heads", static_cast<uint32_t>(spec.n_kv_heads));
  writer.SetUint32("kite.session.head_dim", static_cast<uint32_t>(spec.head_dim));
  writer.SetUint32("kite.session.vocab", static_cast<uint32_t>(spec.vocab));
  writer.SetString("kite.session.kv_type", std::string(DTypeName(kv.dtype)));

  const int64_t n = n_past();
  std::vector<std::vector<uint8_t>> rows;  // per layer: k rows, then v rows
  if (n > 0) {
    KITE_RETURN_IF_ERROR(writer.AddTensor(
        "history", DType::kI32, {n},
        {reinterpret_cast<const uint8_t*>(history_.data()), history_.size() * sizeof(int32_t)}));
  }
  // Only the owner's cache holds this session's rows; otherwise Load re-feeds the history.
  if (n > 0 && engine_.kv_owner() == this) {
    const KvCacheView view = engine_.kv_cache().view();
    rows.reserve(2 * kv.n_layers);  // the references below stay valid
    for (int32_t layer = 0; layer < kv.n_layers; ++layer) {
      const KvLayerView& cache = view.layers[layer];
      const uint64_t row = cache.row_bytes();
      std::vector<uint8_t>& k = rows.emplace_back(n * row);
      std::vector<uint8_t>& v = rows.emplace_back(n * row);
      for (int64_t pos = 0; pos < n; ++pos) {
        std::memcpy(k.data() + pos * row, cache.key(pos), row);
        std::memcpy(v.data() + pos * row, cache.value(pos), row);
      }
    }
    for (int32_t layer = 0; layer < kv.n_layers; ++layer) {
      const std::string blk = "blk." + std::to_string(layer) + ".";
      const std::vector<int64_t> shape = {n, kv.n_kv_heads, kv.head_dim};
      KITE_RETURN_IF_ERROR(writer.AddTensor(blk + "k", kv.dtype, shape, rows[2 * layer]));
      KITE_RETURN_IF_ERROR(writer.AddTensor(blk + "v", kv.dtype, shape, rows[2 * layer + 1]));
    }
  }
  return writer.Write(path);
}

Status Session::Load(const std::string& path) {
  const GgufFile file = KITE_TRY(GgufFile::Open(path));
  const ModelSpec& spec = engine_.spec();
  const KvCacheConfig& kv = engine_.kv_cache().config();
  auto expect = [&](const char* key, int64_t want) -> Status {
    const int64_t have = KITE_TRY(file.GetInt(key));
    if (have != want) {
      return InvalidInput(path + ": " + key + " is " + std::to_string(have) + ", this model has " +
                          std::to_string(want) + " (the session was saved with another model)");
    }
    return Ok();
  };
  KITE_RETURN_IF_ERROR(expect("kite.session.version", kSessionVersion));
  KITE_RETURN_IF_ERROR(expect("kite.session.n_layers", spec.n_layers));
  KITE_RETURN_IF_ERROR(expect("kite.session.n_kv_heads", spec.n_kv_heads));
  KITE_RETURN_IF_ERROR(expect("kite.session.head_dim", spec.head_dim));
  KITE_RETURN_IF_ERROR(expect("kite.session.vocab", spec.vocab));
  KITE_RETURN_IF_ERROR(expect("kite.session.fingerprint", ModelFingerprint(spec)));

  std::vector<int32_t> ids;
  if (const GgufTensorInfo* history = file.FindTensor("history")) {
    if (history->dtype != DType::kI32 || history->shape.size() != 1) {
      return InvalidInput(path + ": tensor 'history' is " + ShapeString(history->shape) + " " +
                          std::string(DTypeName(history->dtype)) + ", expected [n_past] i32");
    }
    ids.resize(history->shape[0]);
    std::memcpy(ids.data(), file.View(*history).data, ids.size() * sizeof(int32_t));
  }
  if (static_cast<int64_t>(ids.size()) > engine_.context_length()) {
    return InvalidInput(path + ": the session holds " + std::to_string(ids.size()) +
                        " tokens; the context holds " + std::to_string(engine_.context_length()));
  }
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= spec.vocab) {
      return InvalidInput(path + ": history[" + std::to_string(i) + "] is id " +
                          std::to_string(ids[i]) + ", outside the vocabulary [0, " +
                          std::to_string(spec.vocab) + ")");
    }
  }

  // The KV rows, when all are there in the cache's type and shape.
  const int64_t n = static_cast<int64_t>(ids.size());
  std::vector<const GgufTensorInfo*> tensors;
  for (int32_t layer = 0; n > 0 && layer < kv.n_layers; ++layer) {
    for (const char* part : {"k", "v"}) {
      const std::string name = "blk." + std::to_string(layer) + "." + part;
      const GgufTensorInfo* info = file.FindTensor(name);
      if (info == nullptr) break;
      const std::vector<int64_t> shape = {n, kv.n_kv_heads, kv.head_dim};
      if (info->shape != shape) {
        return InvalidInput(path + ": tensor '" + name + "' has shape " + ShapeString(info->shape) +
                            ", expected " + ShapeString(shape));
      }
      if (info->dtype == kv.dtype) tensors.push_back(info);
    }
  }

  Reset();
  if (tensors.size() != static_cast<size_t>(2 * kv.n_layers) || n == 0) {
    if (n > 0) KITE_RETURN_IF_ERROR(Feed(ids));
    return Ok();
  }
  engine_.set_kv_owner(this);
  KITE_RETURN_IF_ERROR(engine_.kv_cache().Resize(n));
  const KvCacheView view = engine_.kv_cache().view();
  for (int32_t layer = 0; layer < kv.n_layers; ++layer) {
    const KvLayerView& cache = view.layers[layer];
    const uint64_t row = cache.row_bytes();
    const auto* k = static_cast<const uint8_t*>(file.View(*tensors[2 * layer]).data);
    const auto* v = static_cast<const uint8_t*>(file.View(*tensors[2 * layer + 1]).data);
    for (int64_t pos = 0; pos < n; ++pos) {
      std::memcpy(cache.key(pos), k + pos * row, row);
      std::memcpy(cache.value(pos), v + pos * row, row);
    }
  }
  history_.assign(ids.begin(), ids.end());  // keeps the reserved capacity
  return Ok();
}

}  // namespace kite
