// Lookups on a parsed GGUF file. Everything here was validated by Parse, so these only check
// what the caller asks for (presence and type).
#include "format/gguf.h"

namespace kite {

namespace {

std::unexpected<Error> WrongType(const GgufFile& file, std::string_view key, const GgufValue& value,
                                 std::string_view expected) {
  return InvalidInput(file.name() + ": key '" + std::string(key) + "' is " +
                      std::string(GgufTypeName(value.type())) + ", expected " +
                      std::string(expected));
}

Result<const GgufValue*> Require(const GgufFile& file, std::string_view key) {
  const GgufValue* value = file.Find(key);
  if (value == nullptr) return NotFound(file.name() + ": key '" + std::string(key) + "' not found");
  return value;
}

}  // namespace

const GgufValue* GgufFile::Find(std::string_view key) const {
  auto it = metadata_index_.find(key);
  return it == metadata_index_.end() ? nullptr : &metadata_[it->second].second;
}

Result<std::string> GgufFile::GetString(std::string_view key) const {
  const GgufValue* value = KITE_TRY(Require(*this, key));
  if (const std::string* text = value->AsString()) return *text;
  return WrongType(*this, key, *value, "string");
}

Result<int64_t> GgufFile::GetInt(std::string_view key) const {
  const GgufValue* value = KITE_TRY(Require(*this, key));
  if (std::optional<int64_t> number = value->AsInt()) return *number;
  if (const uint64_t* big = std::get_if<uint64_t>(&value->value)) {
    return InvalidInput(name_ + ": key '" + std::string(key) + "' is uint64 " +
                        std::to_string(*big) + ", expected a value that fits int64");
  }
  return WrongType(*this, key, *value, "an integer");
}

Result<double> GgufFile::GetFloat(std::string_view key) const {
  const GgufValue* value = KITE_TRY(Require(*this, key));
  if (std::optional<double> number = value->AsFloat()) return *number;
  return WrongType(*this, key, *value, "a number");
}

Result<bool> GgufFile::GetBool(std::string_view key) const {
  const GgufValue* value = KITE_TRY(Require(*this, key));
  if (const bool* flag = std::get_if<bool>(&value->value)) return *flag;
  return WrongType(*this, key, *value, "bool");
}

Result<const GgufValue::Array*> GgufFile::GetArray(std::string_view key) const {
  const GgufValue* value = KITE_TRY(Require(*this, key));
  if (const GgufValue::Array* array = value->AsArray()) return array;
  return WrongType(*this, key, *value, "array");
}

const GgufTensorInfo* GgufFile::FindTensor(std::string_view name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

TensorView GgufFile::View(const GgufTensorInfo& info) const {
  // Parse checked that [data_offset_ + offset, + bytes) lies inside bytes_.
  return TensorView{info.name, info.dtype, info.shape, bytes_.data() + data_offset_ + info.offset,
                    info.bytes};
}

}  // namespace kite
