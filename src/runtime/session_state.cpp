// Session::Save / Session::Load: a session's history and KV cache rows as a GGUF file.
//   kite.session.version        u32   2
//   kite.session.model          u64   the model's identity (runtime/model_identity.h)
//   kite.session.checksum       u64   FNV-1a 64 over every tensor's bytes, in file order
//   kite.session.{n_layers, n_kv_heads, head_dim, vocab}  u32
//   kite.session.kv_type        str   "f16" / "f32" / "q8_0"
//   history                     i32   [n_past]
//   blk.N.k, blk.N.v            kv    [n_past, n_kv_heads, head_dim]   (q8_0: the cache rows as
//                                     they stand, blocks along head_dim)
// Without the KV tensors (a file from a Kite whose sessions shared one cache, which saved them
// only while it held the rows) or with another KV type, Load feeds the history again. A damaged file
// or one saved with another model is refused: its KV rows would be used as they are.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "base/hash.h"
#include "format/gguf.h"
#include "runtime/context_limit.h"
#include "runtime/model_identity.h"
#include "runtime/session.h"

namespace kite {

namespace {

constexpr uint32_t kSessionVersion = 2;  // 1 had no checksum and a weaker model fingerprint

std::string Hex(uint64_t value) {
  char text[19];
  std::snprintf(text, sizeof text, "0x%016llx", static_cast<unsigned long long>(value));
  return text;
}

// kite.session.* keys of type u64 (GgufFile::GetInt reads only values that fit in an int64).
Result<uint64_t> GetUint64(const GgufFile& file, const std::string& path, const char* key) {
  const GgufValue* value = file.Find(key);
  if (value == nullptr) return InvalidInput(path + ": missing key " + key);
  const auto* number = std::get_if<uint64_t>(&value->value);
  if (number == nullptr) {
    return InvalidInput(path + ": key " + key + " is " + std::string(GgufTypeName(value->type())) +
                        ", expected u64");
  }
  return *number;
}

}  // namespace

Status Session::Save(const std::string& path) const {
  const ModelConfig& spec = engine_.config();
  const KvCacheConfig& kv = sequence_.config();
  GgufWriter writer;
  writer.SetUint32("kite.session.version", kSessionVersion);
  writer.SetValue("kite.session.model", GgufValue{ModelIdentity(engine_.model())});
  writer.SetUint32("kite.session.n_layers", static_cast<uint32_t>(spec.n_layers));
  writer.SetUint32("kite.session.n_kv_heads", static_cast<uint32_t>(spec.n_kv_heads));
  writer.SetUint32("kite.session.head_dim", static_cast<uint32_t>(spec.head_dim));
  writer.SetUint32("kite.session.vocab", static_cast<uint32_t>(spec.vocab));
  writer.SetString("kite.session.kv_type", std::string(DTypeName(kv.dtype)));

  const int64_t n = n_past();
  std::vector<std::vector<uint8_t>> rows;  // per layer: k rows, then v rows
  uint64_t checksum = kFnv1aStart;
  if (n > 0) {
    const std::span<const uint8_t> ids(reinterpret_cast<const uint8_t*>(history_.data()),
                                       history_.size() * sizeof(int32_t));
    KITE_RETURN_IF_ERROR(writer.AddTensor("history", DType::kI32, {n}, ids));
    checksum = Fnv1a(ids.data(), ids.size(), checksum);
  }
  if (n > 0) {
    const KvSequenceView view = sequence_.view();
    rows.reserve(2 * kv.n_layers);  // the references below stay valid
    for (int32_t layer = 0; layer < kv.n_layers; ++layer) {
      const KvLayerView& cache = view.layers[layer];
      const uint64_t row = cache.row_bytes();
      std::vector<uint8_t>& k = rows.emplace_back(n * row);
      std::vector<uint8_t>& v = rows.emplace_back(n * row);
      // Rows a sliding-window layer released stay zeros: no later query of the layer sees them.
      for (int64_t pos = 0; pos < n; ++pos) {
        if (cache.pages[pos / cache.page_size] == nullptr) continue;
        std::memcpy(k.data() + pos * row, cache.key(pos), row);
        std::memcpy(v.data() + pos * row, cache.value(pos), row);
      }
    }
    for (int32_t layer = 0; layer < kv.n_layers; ++layer) {
      const std::string blk = "blk." + std::to_string(layer) + ".";
      const std::vector<int64_t> shape = {n, kv.n_kv_heads, kv.head_dim};
      KITE_RETURN_IF_ERROR(writer.AddTensor(blk + "k", kv.dtype, shape, rows[2 * layer]));
      KITE_RETURN_IF_ERROR(writer.AddTensor(blk + "v", kv.dtype, shape, rows[2 * layer + 1]));
      for (const std::vector<uint8_t>* part : {&rows[2 * layer], &rows[2 * layer + 1]}) {
        checksum = Fnv1a(part->data(), part->size(), checksum);
      }
    }
  }
  writer.SetValue("kite.session.checksum", GgufValue{checksum});
  // The model's own file may not be overwritten by a session.
  return writer.Write(path, {spec.source});
}

Status Session::Load(const std::string& path) {
  const GgufFile file = KITE_TRY(GgufFile::Open(path));
  const ModelConfig& spec = engine_.config();
  const KvCacheConfig& kv = sequence_.config();
  auto expect = [&](const char* key, int64_t want) -> Status {
    const int64_t have = KITE_TRY(file.GetInt(key));
    if (have != want) {
      return InvalidInput(path + ": " + key + " is " + std::to_string(have) + ", this model has " +
                          std::to_string(want) + " (the session was saved with another model)");
    }
    return Ok();
  };
  const int64_t version = KITE_TRY(file.GetInt("kite.session.version"));
  if (version != kSessionVersion) {
    return InvalidInput(path + ": session format version " + std::to_string(version) +
                        "; this Kite reads version " + std::to_string(kSessionVersion) +
                        " (save the session again)");
  }
  KITE_RETURN_IF_ERROR(expect("kite.session.n_layers", spec.n_layers));
  KITE_RETURN_IF_ERROR(expect("kite.session.n_kv_heads", spec.n_kv_heads));
  KITE_RETURN_IF_ERROR(expect("kite.session.head_dim", spec.head_dim));
  KITE_RETURN_IF_ERROR(expect("kite.session.vocab", spec.vocab));
  const uint64_t model = KITE_TRY(GetUint64(file, path, "kite.session.model"));
  if (model != ModelIdentity(engine_.model())) {
    return InvalidInput(path + ": saved with another model (identity " + Hex(model) + "; " +
                        "this model is " + Hex(ModelIdentity(engine_.model())) +
                        "): its KV cache does not apply to these weights");
  }
  const uint64_t stored = KITE_TRY(GetUint64(file, path, "kite.session.checksum"));
  uint64_t checksum = kFnv1aStart;
  for (const GgufTensorInfo& info : file.tensors()) {
    checksum = Fnv1a(file.View(info).data, info.bytes, checksum);
  }
  if (checksum != stored) {
    return InvalidInput(path + ": damaged: the checksum of its history and KV data is " +
                        Hex(checksum) + ", the file says " + Hex(stored) + "; not loaded");
  }

  std::vector<int32_t> ids;
  if (const GgufTensorInfo* history = file.FindTensor("history")) {
    if (history->dtype != DType::kI32 || history->shape.size() != 1) {
      return InvalidInput(path + ": tensor 'history' is " + ShapeString(history->shape) + " " +
                          std::string(DTypeName(history->dtype)) + ", expected [n_past] i32");
    }
    ids.resize(history->shape[0]);
    std::memcpy(ids.data(), file.View(*history).data, ids.size() * sizeof(int32_t));
  }
  KITE_RETURN_IF_ERROR(
      CheckContextRoom(path + ": the session", 0, std::ssize(ids), engine_.context_length()));
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
  KITE_RETURN_IF_ERROR(sequence_.Resize(n));
  const KvSequenceView view = sequence_.view();
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
