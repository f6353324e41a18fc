#include "tokenizer/hf_json.h"

#include "base/json_util.h"

namespace kite::tok {

using nlohmann::json;

std::string JoinPath(std::string_view parent, std::string_view key) {
  if (parent.empty()) return std::string(key);
  return std::string(parent) + "." + std::string(key);
}

std::string IndexPath(std::string_view parent, size_t index) {
  return std::string(parent) + "[" + std::to_string(index) + "]";
}

const json* JsonFields::Member(const json& object, std::string_view key) {
  if (!object.is_object()) return nullptr;
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) return nullptr;
  return &*it;
}

std::unexpected<Error> JsonFields::Wrong(std::string_view path, std::string_view expected,
                                         const json& value) const {
  return InvalidInput(file_ + ": field '" + std::string(path) + "': expected " +
                      std::string(expected) + ", got " + std::string(JsonKind(value)));
}

std::unexpected<Error> JsonFields::Bad(std::string_view path, std::string_view message) const {
  return InvalidInput(file_ + ": field '" + std::string(path) + "': " + std::string(message));
}

std::unexpected<Error> JsonFields::NotSupported(std::string_view path,
                                                std::string_view message) const {
  return Unsupported(file_ + ": field '" + std::string(path) + "': " + std::string(message));
}

Result<const json*> JsonFields::Object(const json& parent, std::string_view key,
                                       std::string_view path) const {
  const std::string full = JoinPath(path, key);
  const json* value = Member(parent, key);
  if (value == nullptr) return Bad(full, "missing (expected an object)");
  if (!value->is_object()) return Wrong(full, "an object", *value);
  return value;
}

Result<const json*> JsonFields::Array(const json& parent, std::string_view key,
                                      std::string_view path) const {
  const std::string full = JoinPath(path, key);
  const json* value = Member(parent, key);
  if (value == nullptr) return Bad(full, "missing (expected an array)");
  if (!value->is_array()) return Wrong(full, "an array", *value);
  return value;
}

Result<std::string> JsonFields::String(const json& parent, std::string_view key,
                                       std::string_view path) const {
  const std::string full = JoinPath(path, key);
  const json* value = Member(parent, key);
  if (value == nullptr) return Bad(full, "missing (expected a string)");
  if (!value->is_string()) return Wrong(full, "a string", *value);
  return value->get_ref<const std::string&>();
}

Result<int64_t> JsonFields::Int(const json& parent, std::string_view key,
                                std::string_view path) const {
  const std::string full = JoinPath(path, key);
  const json* value = Member(parent, key);
  if (value == nullptr) return Bad(full, "missing (expected an integer)");
  const std::optional<int64_t> number = JsonInt(*value);
  if (!number) return Wrong(full, "an integer", *value);
  return *number;
}

Result<bool> JsonFields::BoolOr(const json& parent, std::string_view key, std::string_view path,
                                bool fallback) const {
  const json* value = Member(parent, key);
  if (value == nullptr) return fallback;
  if (!value->is_boolean()) return Wrong(JoinPath(path, key), "true or false", *value);
  return value->get<bool>();
}

Result<std::string> JsonFields::StringOr(const json& parent, std::string_view key,
                                         std::string_view path, std::string fallback) const {
  const json* value = Member(parent, key);
  if (value == nullptr) return fallback;
  if (!value->is_string()) return Wrong(JoinPath(path, key), "a string", *value);
  return value->get_ref<const std::string&>();
}

Result<int64_t> JsonFields::IntOr(const json& parent, std::string_view key, std::string_view path,
                                  int64_t fallback) const {
  const json* value = Member(parent, key);
  if (value == nullptr) return fallback;
  const std::optional<int64_t> number = JsonInt(*value);
  if (!number) return Wrong(JoinPath(path, key), "an integer", *value);
  return *number;
}

}  // namespace kite::tok
