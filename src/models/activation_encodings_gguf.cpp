#include "models/activation_encodings_gguf.h"

#include <vector>

namespace kite {

namespace {

constexpr char kPrefix[] = "kite.activations.";

std::string Key(const char* name) { return std::string(kPrefix) + name; }

}  // namespace

Status WriteActivationEncodingKeys(const ActivationEncodingKeys& keys, GgufWriter& writer) {
  std::vector<std::string> names;
  GgufValue::Array bitwidths{GgufType::kUint32, {}};
  GgufValue::Array scales{GgufType::kFloat32, {}};
  GgufValue::Array offsets{GgufType::kInt32, {}};
  for (const auto& [name, e] : keys.by_node) {
    if (e.granularity != EncodingGranularity::kPerTensor || e.is_signed ||
        (e.bits != 8 && e.bits != 16) || e.scales.size() != 1 || e.offsets.size() > 1) {
      return InvalidInput("activation encoding of '" + name + "' is " + EncodingString(e) +
                          ", expected an unsigned per-tensor 8- or 16-bit one");
    }
    names.push_back(name);
    bitwidths.items.push_back(GgufValue{static_cast<uint32_t>(e.bits)});
    scales.items.push_back(GgufValue{e.scales[0]});
    offsets.items.push_back(GgufValue{e.offsets.empty() ? int32_t{0} : e.offsets[0]});
  }
  writer.SetUint32(Key("version"), 1);
  writer.SetString(Key("method"), keys.method);
  writer.SetUint32(Key("bits"), static_cast<uint32_t>(keys.bits));
  writer.SetUint32(Key("kv_bits"), static_cast<uint32_t>(keys.kv_bits));
  writer.SetStringArray(Key("names"), names);
  writer.SetValue(Key("bitwidths"), GgufValue{std::move(bitwidths)});
  writer.SetValue(Key("scales"), GgufValue{std::move(scales)});
  writer.SetValue(Key("offsets"), GgufValue{std::move(offsets)});
  return Ok();
}

Result<ActivationEncodingKeys> ReadActivationEncodingKeys(const GgufFile& gguf) {
  ActivationEncodingKeys keys;
  if (gguf.Find(Key("version")) == nullptr) return keys;
  const std::string where = gguf.name() + ": ";
  const int64_t version = KITE_TRY(gguf.GetInt(Key("version")));
  if (version != 1) {
    return Unsupported(where + Key("version") + " is " + std::to_string(version) +
                       ", this Kite reads version 1");
  }
  keys.method = KITE_TRY(gguf.GetString(Key("method")));
  keys.bits = static_cast<int32_t>(KITE_TRY(gguf.GetInt(Key("bits"))));
  keys.kv_bits = static_cast<int32_t>(KITE_TRY(gguf.GetInt(Key("kv_bits"))));
  const GgufValue::Array* names = KITE_TRY(gguf.GetArray(Key("names")));
  const GgufValue::Array* bitwidths = KITE_TRY(gguf.GetArray(Key("bitwidths")));
  const GgufValue::Array* scales = KITE_TRY(gguf.GetArray(Key("scales")));
  const GgufValue::Array* offsets = KITE_TRY(gguf.GetArray(Key("offsets")));
  const size_t n = names->items.size();
  for (const auto& [array, key] : {std::pair{bitwidths, "bitwidths"}, std::pair{scales, "scales"},
                                   std::pair{offsets, "offsets"}}) {
    if (array->items.size() != n) {
      return InvalidInput(where + Key(key) + " holds " + std::to_string(array->items.size()) +
                          " values, " + Key("names") + " " + std::to_string(n));
    }
  }
  for (size_t i = 0; i < n; ++i) {
    const std::string* name = names->items[i].AsString();
    const std::optional<int64_t> bits = bitwidths->items[i].AsInt();
    const std::optional<double> scale = scales->items[i].AsFloat();
    const std::optional<int64_t> offset = offsets->items[i].AsInt();
    const std::string what = where + "activation encoding " + std::to_string(i);
    if (name == nullptr || !bits || !scale || !offset || (*bits != 8 && *bits != 16)) {
      return InvalidInput(what + ": expected a name, 8 or 16 bits, a scale and an offset");
    }
    QuantEncoding e;
    e.bits = static_cast<int32_t>(*bits);
    e.is_signed = false;
    e.scales = {static_cast<float>(*scale)};
    e.offsets = {static_cast<int32_t>(*offset)};
    const std::vector<int64_t> scalar = {1};
    if (Status valid = ValidateEncoding(e, scalar, StorageDType(e)); !valid) {
      return std::unexpected(std::move(valid.error()).WithContext(what + " ('" + *name + "')"));
    }
    keys.by_node.emplace(*name, std::move(e));
  }
  return keys;
}

}  // namespace kite
