// JSON for the format layer (safetensors headers, index files, config.json) without exceptions:
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

}  // namespace kite
