// JSON without exceptions (safetensors headers, index files, config.json, chip files):
// malformed text becomes an error naming the file, line and column, and every message names a
// value's kind the same way.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"

namespace kite {

enum class JsonDuplicateKeys {
  kLastWins,  // what Python's json module does; right for hand-edited configs
  kReject,    // for headers that must not name one thing twice (a tensor, a weight_map entry)
};

// Parses `text` (one JSON value, nothing after it but whitespace). `file` prefixes messages.
Result<nlohmann::json> ParseJson(std::string_view text, const std::string& file,
                                 JsonDuplicateKeys duplicates = JsonDuplicateKeys::kLastWins);

// "null", "boolean", "integer", "number", "string", "array" or "object".
std::string_view JsonKind(const nlohmann::json& value);

// The value as an int64 when it is a JSON integer that fits; nullopt for anything else,
// including floats such as 2048.0.
std::optional<int64_t> JsonInt(const nlohmann::json& value);

// The fields of one JSON object read with errors that name the file and the field's path
// ("chips/888.json: cost.tile is string, expected a number"): for hand-written data files.
class JsonFields {
 public:
  JsonFields(const nlohmann::json& object, std::string file, std::string prefix = "")
      : object_(&object), file_(std::move(file)), prefix_(std::move(prefix)) {}

  // A number >= 0.
  Result<double> Number(const char* key) const;
  // A whole number in [1, max], for counts and sizes stored as int.
  Result<int> Count(const char* key, int max) const;
  Result<std::string> String(const char* key) const;
  Result<bool> Bool(const char* key) const;
  Result<JsonFields> Object(const char* key) const;
  const std::string& file() const { return file_; }

 private:
  Result<const nlohmann::json*> Find(const char* key) const;
  std::unexpected<Error> Wrong(const char* key, const char* expected,
                               const nlohmann::json& v) const;
  const nlohmann::json* object_;
  std::string file_, prefix_;
};

}  // namespace kite
