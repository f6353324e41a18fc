#include "models/encoded_weight_gguf.h"

#include <algorithm>
#include <array>
#include <cstring>

namespace kite {

namespace {

constexpr std::array<std::string_view, 7> kFields = {
    "bits", "signed", "granularity", "axis", "block_axis", "block_size", "multiplier_bits"};

constexpr std::array<EncodingGranularity, 4> kGranularities = {
    EncodingGranularity::kPerTensor, EncodingGranularity::kPerAxis,
    EncodingGranularity::kPerBlock, EncodingGranularity::kLpbq};

// Reads the encoding keys of one tensor; messages name the file, the tensor and the key.
class EncodingKeys {
 public:
  EncodingKeys(const GgufFile& gguf, const std::string& tensor) : gguf_(gguf), tensor_(tensor) {}

  Result<int64_t> Int(std::string_view field, int64_t min, int64_t max) const {
    const std::string key = WeightEncodingKey(tensor_, field);
    if (gguf_.Find(key) == nullptr) return Missing(key);
    const int64_t value = KITE_TRY(gguf_.GetInt(key));
    if (value < min || value > max) {
      return InvalidInput(Where() + ": key '" + key + "' is " + std::to_string(value) +
                          ", expected " + std::to_string(min) + ".." + std::to_string(max));
    }
    return value;
  }
  Result<bool> Bool(std::string_view field) const {
    const std::string key = WeightEncodingKey(tensor_, field);
    if (gguf_.Find(key) == nullptr) return Missing(key);
    return gguf_.GetBool(key);
  }
  Result<EncodingGranularity> Granularity() const {
    const std::string key = WeightEncodingKey(tensor_, "granularity");
    if (gguf_.Find(key) == nullptr) return Missing(key);
    const std::string name = KITE_TRY(gguf_.GetString(key));
    for (EncodingGranularity g : kGranularities) {
      if (GranularityKeyName(g) == name) return g;
    }
    return InvalidInput(Where() + ": key '" + key + "' is '" + name +
                        "', expected per_tensor, per_axis, per_block or lpbq");
  }
  std::string Where() const { return gguf_.name() + ": tensor '" + tensor_ + "'"; }

 private:
  std::unexpected<Error> Missing(const std::string& key) const {
    return InvalidInput(Where() + " is encoded but key '" + key + "' is missing");
  }
  const GgufFile& gguf_;
  const std::string& tensor_;
};

// The companion `suffix` of `name`: present (or absent) as `required` says, of `dtype` and
// `shape`. nullptr when absent and not required.
Result<const GgufTensorInfo*> Companion(const GgufFile& gguf, const std::string& name,
                                        std::string_view suffix, bool required, DType dtype,
                                        const std::vector<int64_t>& shape) {
  const std::string companion = name + std::string(suffix);
  const GgufTensorInfo* info = gguf.FindTensor(companion);
  const std::string where = gguf.name() + ": tensor '" + name + "'";
  if (info == nullptr) {
    if (!required) return info;
    return InvalidInput(where + " is encoded but its companion '" + companion + "' (" +
                        ShapeString(shape) + " " + std::string(DTypeName(dtype)) +
                        ") is missing");
  }
  if (info->dtype != dtype || info->shape != shape) {
    return InvalidInput(where + ": companion '" + companion + "' is " + ShapeString(info->shape) +
                        " " + std::string(DTypeName(info->dtype)) + ", expected " +
                        ShapeString(shape) + " " + std::string(DTypeName(dtype)));
  }
  return info;
}

template <typename T>
std::vector<T> ReadAll(const GgufFile& gguf, const GgufTensorInfo& info) {
  const TensorView view = gguf.View(info);
  std::vector<T> out(view.bytes / sizeof(T));
  std::memcpy(out.data(), view.data, out.size() * sizeof(T));
  return out;
}

}  // namespace

std::string WeightEncodingKey(std::string_view tensor, std::string_view field) {
  std::string key(kWeightEncodingPrefix);
  key.append(tensor).append(".").append(field);
  return key;
}

std::string_view GranularityKeyName(EncodingGranularity granularity) {
  switch (granularity) {
    case EncodingGranularity::kPerTensor:
      return "per_tensor";
    case EncodingGranularity::kPerAxis:
      return "per_axis";
    case EncodingGranularity::kPerBlock:
      return "per_block";
    case EncodingGranularity::kLpbq:
      return "lpbq";
  }
  return "?";
}

std::vector<int64_t> CodesFileShape(DType dtype, std::span<const int64_t> shape) {
  std::vector<int64_t> out(shape.begin(), shape.end());
  if (!out.empty()) out.back() = out.back() / Traits(dtype).block_size * Traits(dtype).block_bytes;
  return out;
}

std::vector<int64_t> ScaleFileShape(const QuantEncoding& e, std::span<const int64_t> shape) {
  switch (e.granularity) {
    case EncodingGranularity::kPerTensor:
      return {1};
    case EncodingGranularity::kPerAxis:
    case EncodingGranularity::kLpbq:
      return {shape[e.axis]};
    case EncodingGranularity::kPerBlock:
      return MultiplierFileShape(e, shape);
  }
  return {1};
}

std::vector<int64_t> MultiplierFileShape(const QuantEncoding& e, std::span<const int64_t> shape) {
  std::vector<int64_t> out(shape.begin(), shape.end());
  out[e.block_axis] /= e.block_size;
  return out;
}

Result<std::optional<EncodedWeight>> ReadEncodedWeight(const GgufFile& gguf,
                                                       const std::string& name) {
  if (gguf.Find(WeightEncodingKey(name, "bits")) == nullptr &&
      gguf.Find(WeightEncodingKey(name, "granularity")) == nullptr) {
    return std::optional<EncodedWeight>();
  }
  const EncodingKeys keys(gguf, name);
  const GgufTensorInfo* codes = gguf.FindTensor(name);
  if (codes == nullptr) return InvalidInput(keys.Where() + " has encoding keys but no tensor");
  QuantEncoding e;
  e.bits = static_cast<int32_t>(KITE_TRY(keys.Int("bits", 4, 8)));
  if (e.bits != 4 && e.bits != 8) {
    return InvalidInput(keys.Where() + ": key '" + WeightEncodingKey(name, "bits") + "' is " +
                        std::to_string(e.bits) + ", expected 4 or 8");
  }
  e.is_signed = KITE_TRY(keys.Bool("signed"));
  e.granularity = KITE_TRY(keys.Granularity());
  const int64_t rank = static_cast<int64_t>(codes->shape.size());
  if (codes->dtype != DType::kI8 || rank == 0) {
    return InvalidInput(keys.Where() + " is " + ShapeString(codes->shape) + " " +
                        std::string(DTypeName(codes->dtype)) +
                        ", expected i8 codes (an encoded weight)");
  }
  const DType dtype = StorageDType(e);
  std::vector<int64_t> shape = codes->shape;
  shape.back() = shape.back() * Traits(dtype).block_size / Traits(dtype).block_bytes;
  const bool uses_axis = e.granularity == EncodingGranularity::kPerAxis ||
                         e.granularity == EncodingGranularity::kLpbq;
  const bool uses_blocks = e.granularity == EncodingGranularity::kPerBlock ||
                           e.granularity == EncodingGranularity::kLpbq;
  if (uses_axis) e.axis = static_cast<int32_t>(KITE_TRY(keys.Int("axis", 0, rank - 1)));
  if (uses_blocks) {
    e.block_axis = static_cast<int32_t>(KITE_TRY(keys.Int("block_axis", 0, rank - 1)));
    e.block_size = KITE_TRY(keys.Int("block_size", 1, shape[e.block_axis]));
    if (shape[e.block_axis] % e.block_size != 0) {
      return InvalidInput(keys.Where() + ": key '" + WeightEncodingKey(name, "block_size") +
                          "' is " + std::to_string(e.block_size) + ", which does not divide dim " +
                          std::to_string(e.block_axis) + " of " + ShapeString(shape));
    }
  }
  const bool lpbq = e.granularity == EncodingGranularity::kLpbq;
  if (lpbq) e.multiplier_bits = static_cast<int32_t>(KITE_TRY(keys.Int("multiplier_bits", 1, 8)));

  const std::vector<int64_t> scale_shape = ScaleFileShape(e, shape);
  const GgufTensorInfo* scale =
      KITE_TRY(Companion(gguf, name, kScaleSuffix, true, DType::kF32, scale_shape));
  const GgufTensorInfo* offset =
      KITE_TRY(Companion(gguf, name, kOffsetSuffix, false, DType::kI32, scale_shape));
  if (!lpbq && gguf.FindTensor(name + std::string(kLpbqMultSuffix)) != nullptr) {
    return InvalidInput(keys.Where() + ": companion '" + name + std::string(kLpbqMultSuffix) +
                        "' on a " + std::string(GranularityKeyName(e.granularity)) +
                        " encoding; only lpbq has block multipliers");
  }
  const GgufTensorInfo* mult = nullptr;
  if (lpbq) {
    mult = KITE_TRY(Companion(gguf, name, kLpbqMultSuffix, true, DType::kI8,
                              MultiplierFileShape(e, shape)));
  }
  e.scales = ReadAll<float>(gguf, *scale);
  if (offset != nullptr) e.offsets = ReadAll<int32_t>(gguf, *offset);
  if (mult != nullptr) e.multipliers = ReadAll<uint8_t>(gguf, *mult);
  Status valid = ValidateEncoding(e, shape, dtype);
  if (!valid) return std::unexpected(std::move(valid.error()).WithContext(keys.Where()));

  EncodedWeight out;
  out.view = gguf.View(*codes);
  out.view.dtype = dtype;
  out.view.shape = std::move(shape);
  out.encoding = std::move(e);
  return std::optional<EncodedWeight>(std::move(out));
}

Status CheckWeightEncodingKeys(const GgufFile& gguf) {
  bool any = false;
  for (const auto& [key, value] : gguf.metadata()) {
    if (!key.starts_with(kWeightEncodingPrefix)) continue;
    any = true;
    const std::string_view rest = std::string_view(key).substr(kWeightEncodingPrefix.size());
    const size_t dot = rest.rfind('.');
    const std::string_view field = dot == std::string_view::npos ? "" : rest.substr(dot + 1);
    if (std::find(kFields.begin(), kFields.end(), field) == kFields.end()) {
      return InvalidInput(gguf.name() + ": key '" + key +
                          "' is not an encoding field (expected kite.weight_encoding.<tensor>."
                          "{bits, signed, granularity, axis, block_axis, block_size, "
                          "multiplier_bits})");
    }
    const std::string_view tensor = rest.substr(0, dot);
    if (gguf.FindTensor(tensor) == nullptr) {
      return InvalidInput(gguf.name() + ": key '" + key + "' describes tensor '" +
                          std::string(tensor) + "', which the file does not hold");
    }
  }
  if (!any) return Ok();
  if (gguf.Find(kQuantizedGgufVersionKey) == nullptr) {
    return InvalidInput(gguf.name() + ": encoded weights but no key '" +
                        std::string(kQuantizedGgufVersionKey) + "'");
  }
  const int64_t version = KITE_TRY(gguf.GetInt(kQuantizedGgufVersionKey));
  if (version != kQuantizedGgufVersion) {
    return Unsupported(gguf.name() + ": key '" + std::string(kQuantizedGgufVersionKey) + "' is " +
                       std::to_string(version) + "; this Kite reads version " +
                       std::to_string(kQuantizedGgufVersion));
  }
  return Ok();
}

bool IsEncodingCompanion(const GgufFile& gguf, std::string_view tensor) {
  for (std::string_view suffix : {kScaleSuffix, kOffsetSuffix, kLpbqMultSuffix}) {
    if (!tensor.ends_with(suffix)) continue;
    const std::string_view base = tensor.substr(0, tensor.size() - suffix.size());
    if (gguf.Find(WeightEncodingKey(base, "bits")) != nullptr) return true;
  }
  return false;
}

}  // namespace kite
