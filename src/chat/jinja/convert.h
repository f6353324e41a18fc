// Turning values into text (printing, `~`, JSON) and JSON into values, the way the reference
// (@huggingface/jinja) does it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>

#include "base/status.h"
#include "chat/jinja/value.h"

namespace kite::jinja {

// Every conversion below fails (kOutOfResources) rather than build text longer than `max_bytes`.

// What `{{ value }}` prints: floats keep a ".0", lists and dicts print as JSON, true is "true".
Result<std::string> ToOutput(const Value& value, size_t max_bytes);

// JavaScript's String(value) of the underlying value, which `~`, `+` and `join` use: floats
// print like ints (1.0 → "1"), lists join their items with ",".
Result<std::string> JsString(const Value& value, size_t max_bytes);

// JavaScript's `==` between the underlying values (1 == "1", [1] == "1", none == undefined).
Result<bool> LooseEquals(const Value& a, const Value& b, size_t max_bytes);

struct JsonOptions {
  std::optional<int> indent;  // none or 0: one line
  bool ensure_ascii = false;
  bool sort_keys = false;
  std::optional<std::pair<std::string, std::string>> separators;  // item, key
  bool undefined_as_null = true;  // false when printing a list or dict (prints "undefined")
  size_t max_bytes = SIZE_MAX;
};

// The `tojson` filter (Python json.dumps style separators).
Result<std::string> ToJson(const Value& value, const JsonOptions& options);

// Template variables from JSON, as the reference converts JavaScript objects: integral numbers
// become ints, and dict keys that look like array indices come first, in numeric order.
Result<Value> FromJson(const nlohmann::ordered_json& json);

}  // namespace kite::jinja
