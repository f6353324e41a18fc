// Reading tokenizer.json values without exceptions: every accessor checks the JSON type and
// names the field path ("model.merges[12]") and what it expected when it is wrong.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "base/status.h"

namespace kite::tok {

class JsonFields {
 public:
  explicit JsonFields(std::string file) : file_(std::move(file)) {}

  const std::string& file() const { return file_; }

  // The member `key` of `object`, or nullptr when it is absent or JSON null.
  static const nlohmann::json* Member(const nlohmann::json& object, std::string_view key);

  // InvalidInput "<file>: field '<path>': expected <what>, got <kind of value>".
  std::unexpected<Error> Wrong(std::string_view path, std::string_view expected,
                               const nlohmann::json& value) const;
  // InvalidInput "<file>: field '<path>': <message>".
  std::unexpected<Error> Bad(std::string_view path, std::string_view message) const;
  // Unsupported "<file>: field '<path>': <message>".
  std::unexpected<Error> NotSupported(std::string_view path, std::string_view message) const;

  // Required members of the given type.
  Result<const nlohmann::json*> Object(const nlohmann::json& parent, std::string_view key,
                                       std::string_view path) const;
  Result<const nlohmann::json*> Array(const nlohmann::json& parent, std::string_view key,
                                      std::string_view path) const;
  Result<std::string> String(const nlohmann::json& parent, std::string_view key,
                             std::string_view path) const;
  Result<int64_t> Int(const nlohmann::json& parent, std::string_view key,
                      std::string_view path) const;

  // Optional members: `fallback` when absent or null, an error when of another type.
  Result<bool> BoolOr(const nlohmann::json& parent, std::string_view key, std::string_view path,
                      bool fallback) const;
  Result<std::string> StringOr(const nlohmann::json& parent, std::string_view key,
                               std::string_view path, std::string fallback) const;
  Result<int64_t> IntOr(const nlohmann::json& parent, std::string_view key, std::string_view path,
                        int64_t fallback) const;

 private:
  std::string file_;
};

// "a.b" from "a" and "b"; "a[3]" from "a" and 3.
std::string JoinPath(std::string_view parent, std::string_view key);
std::string IndexPath(std::string_view parent, size_t index);

}  // namespace kite::tok
