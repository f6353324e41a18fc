#include "chat/jinja/convert.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <string_view>
#include <vector>

#include "base/utf8.h"
#include "chat/jinja/js_string.h"

namespace kite::jinja {
namespace {

bool IsContainer(const Value& v) {
  return v.is_array() || v.has_entries() || v.kind() == ValueKind::kFunction;
}

// Number.prototype.toFixed(1) for an integral double.
std::string FixedOneDecimal(double value) {
  if (std::fabs(value) >= 1e21) return FormatJsNumber(value);
  char buffer[48];
  std::snprintf(buffer, sizeof(buffer), "%.0f.0", value);
  return buffer;
}

void AppendHex4(uint32_t unit, std::string* out) {
  char buffer[16];
  std::snprintf(buffer, sizeof(buffer), "\\u%04" PRIx32, unit);
  *out += buffer;
}

// JSON.stringify of a string, then (ensure_ascii) every UTF-16 unit from 0x7f up as \uXXXX.
std::string QuoteJson(std::string_view text, bool ensure_ascii) {
  std::string out = "\"";
  for (size_t pos = 0; pos < text.size();) {
    size_t length;
    const char32_t cp = DecodeUtf8(text, pos, &length);
    pos += length;
    switch (cp) {
      case '"':
        out += "\\\"";
        continue;
      case '\\':
        out += "\\\\";
        continue;
      case '\b':
        out += "\\b";
        continue;
      case '\f':
        out += "\\f";
        continue;
      case '\n':
        out += "\\n";
        continue;
      case '\r':
        out += "\\r";
        continue;
      case '\t':
        out += "\\t";
        continue;
      default:
        break;
    }
    if (cp < 0x20) {
      AppendHex4(cp, &out);
    } else if (ensure_ascii && cp >= 0x10000) {
      AppendHex4(0xd800 + ((cp - 0x10000) >> 10), &out);
      AppendHex4(0xdc00 + ((cp - 0x10000) & 0x3ff), &out);
    } else if (ensure_ascii && cp >= 0x7f) {
      AppendHex4(cp, &out);
    } else {
      AppendUtf8(cp, &out);
    }
  }
  out += '"';
  return out;
}

// An approximation of String.prototype.localeCompare for keys: case-insensitive first, then
// lower case before upper case.
bool LocaleLess(const std::string& a, const std::string& b) {
  const int folded = CompareUtf16(JsToLower(a), JsToLower(b));
  if (folded != 0) return folded < 0;
  return CompareUtf16(a, b) > 0;
}

Status TooLong(size_t max_bytes) {
  return MakeError(ErrorCode::kOutOfResources,
                   "text longer than " + std::to_string(max_bytes) + " bytes");
}

Status AppendJson(const Value& value, const JsonOptions& options, int depth, std::string* out) {
  if (out->size() > options.max_bytes) return TooLong(options.max_bytes);
  const int indent = options.indent.value_or(0);
  std::string item_separator = indent > 0 ? "," : ", ";
  std::string key_separator = ": ";
  if (options.separators) std::tie(item_separator, key_separator) = *options.separators;
  const std::string base_padding = "\n" + std::string(static_cast<size_t>(indent) * depth, ' ');
  const std::string child_padding = base_padding + std::string(indent, ' ');

  switch (value.kind()) {
    case ValueKind::kNone:
      *out += "null";
      return Ok();
    case ValueKind::kUndefined:
      *out += options.undefined_as_null ? "null" : "undefined";
      return Ok();
    case ValueKind::kBool:
      *out += value.boolean() ? "true" : "false";
      return Ok();
    case ValueKind::kInt:
    case ValueKind::kFloat:
      *out += std::isfinite(value.number()) ? FormatJsNumber(value.number()) : "null";
      return Ok();
    case ValueKind::kString:
      *out += QuoteJson(value.str(), options.ensure_ascii);
      return Ok();
    case ValueKind::kArray: {
      if (value.is_tuple()) return InvalidInput("cannot convert a tuple to JSON");
      const auto& items = value.items();
      *out += '[';
      for (size_t i = 0; i < items.size(); ++i) {
        if (i > 0) *out += item_separator;
        if (indent > 0) *out += child_padding;
        KITE_RETURN_IF_ERROR(AppendJson(items[i], options, depth + 1, out));
      }
      if (indent > 0 && !items.empty()) *out += base_padding;
      *out += ']';
      return Ok();
    }
    case ValueKind::kObject:
    case ValueKind::kNamespace: {
      if (value.is_kwargs()) return InvalidInput("cannot convert keyword arguments to JSON");
      std::vector<const std::pair<std::string, Value>*> entries;
      for (const auto& entry : value.entries()) entries.push_back(&entry);
      if (options.sort_keys) {
        std::stable_sort(entries.begin(), entries.end(), [](const auto* a, const auto* b) {
          return LocaleLess(a->first, b->first);
        });
      }
      *out += '{';
      for (size_t i = 0; i < entries.size(); ++i) {
        if (i > 0) *out += item_separator;
        if (indent > 0) *out += child_padding;
        *out += QuoteJson(entries[i]->first, options.ensure_ascii);
        *out += key_separator;
        KITE_RETURN_IF_ERROR(AppendJson(entries[i]->second, options, depth + 1, out));
      }
      if (indent > 0 && !entries.empty()) *out += base_padding;
      *out += '}';
      return Ok();
    }
    case ValueKind::kFunction:
      return InvalidInput("cannot convert a function to JSON");
  }
  return Ok();
}

// The position an array-index-like key ("0", "17") sorts at in a JavaScript object.
std::optional<uint32_t> ArrayIndexKey(const std::string& key) {
  if (key.empty() || key.size() > 10 || (key.size() > 1 && key[0] == '0')) return std::nullopt;
  uint64_t value = 0;
  for (char c : key) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + (c - '0');
  }
  if (value >= 0xffffffffull) return std::nullopt;
  return static_cast<uint32_t>(value);
}

Result<Value> FromJsonAt(const nlohmann::ordered_json& json, int depth) {
  if (depth > kMaxValueDepth) {
    return InvalidInput("JSON nests deeper than " + std::to_string(kMaxValueDepth));
  }
  switch (json.type()) {
    case nlohmann::ordered_json::value_t::null:
      return Value::None();
    case nlohmann::ordered_json::value_t::boolean:
      return Value::Bool(json.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer:
      return Value::Int(static_cast<double>(json.get<int64_t>()));
    case nlohmann::ordered_json::value_t::number_unsigned:
      return Value::Int(static_cast<double>(json.get<uint64_t>()));
    case nlohmann::ordered_json::value_t::number_float: {
      const double number = json.get<double>();
      const bool integral = std::isfinite(number) && std::trunc(number) == number;
      return integral ? Value::Int(number) : Value::Float(number);
    }
    case nlohmann::ordered_json::value_t::string:
      return Value::String(SanitizeUtf8(json.get_ref<const std::string&>()));
    case nlohmann::ordered_json::value_t::array: {
      std::vector<Value> items;
      for (const auto& item : json) items.push_back(KITE_TRY(FromJsonAt(item, depth + 1)));
      return Value::Array(std::move(items));
    }
    case nlohmann::ordered_json::value_t::object: {
      Object indexed, named;
      for (const auto& [key, item] : json.items()) {
        Value converted = KITE_TRY(FromJsonAt(item, depth + 1));
        (ArrayIndexKey(key) ? indexed : named)
            .emplace_back(SanitizeUtf8(key), std::move(converted));
      }
      std::stable_sort(indexed.begin(), indexed.end(), [](const auto& a, const auto& b) {
        return *ArrayIndexKey(a.first) < *ArrayIndexKey(b.first);
      });
      for (auto& entry : named) indexed.push_back(std::move(entry));
      return Value::MakeObject(std::move(indexed));
    }
    default:
      return InvalidInput("unsupported JSON value (binary or discarded)");
  }
}

// JavaScript ToPrimitive of a container, for `==` against a scalar.
Result<Value> ToPrimitive(const Value& value, size_t max_bytes) {
  if (value.is_array()) return Value::String(KITE_TRY(JsString(value, max_bytes)));
  if (value.has_entries()) return Value::String("[object Map]");
  return Value::String("function");
}

}  // namespace

Result<std::string> ToOutput(const Value& value, size_t max_bytes) {
  switch (value.kind()) {
    case ValueKind::kFloat: {
      const double number = value.number();
      if (number == 0 && std::signbit(number)) return std::string("-0.0");
      if (std::isfinite(number) && std::trunc(number) == number) return FixedOneDecimal(number);
      return FormatJsNumber(number);
    }
    case ValueKind::kArray:
    case ValueKind::kObject:
    case ValueKind::kNamespace: {
      JsonOptions options;
      options.undefined_as_null = false;
      options.max_bytes = max_bytes;
      return ToJson(value, options);
    }
    default:
      return JsString(value, max_bytes);
  }
}

Result<std::string> JsString(const Value& value, size_t max_bytes) {
  switch (value.kind()) {
    case ValueKind::kUndefined:
      return std::string("undefined");
    case ValueKind::kNone:
      return std::string("null");
    case ValueKind::kBool:
      return std::string(value.boolean() ? "true" : "false");
    case ValueKind::kInt:
    case ValueKind::kFloat:
      return FormatJsNumber(value.number());
    case ValueKind::kString:
      return value.str();
    case ValueKind::kArray: {
      std::string out;
      for (size_t i = 0; i < value.items().size(); ++i) {
        if (i > 0) out += ',';
        out += KITE_TRY(ToOutput(value.items()[i], max_bytes));
        if (out.size() > max_bytes) return std::unexpected(TooLong(max_bytes).error());
      }
      return out;
    }
    case ValueKind::kObject:
    case ValueKind::kNamespace:
      return std::string("[object Map]");
    case ValueKind::kFunction:
      return InvalidInput("cannot convert a function to a string");
  }
  return std::string();
}

Result<bool> LooseEquals(const Value& a, const Value& b, size_t max_bytes) {
  const auto nullish = [](const Value& v) { return v.is_undefined() || v.is_none(); };
  if (nullish(a) || nullish(b)) return nullish(a) && nullish(b);
  if (IsContainer(a) && IsContainer(b)) return a.StrictEquals(b);
  if (IsContainer(a)) return LooseEquals(KITE_TRY(ToPrimitive(a, max_bytes)), b, max_bytes);
  if (IsContainer(b)) return LooseEquals(a, KITE_TRY(ToPrimitive(b, max_bytes)), max_bytes);
  if (a.is_string() && b.is_string()) return a.str() == b.str();
  // Any other mix of bool, number and string compares as numbers.
  const auto number = [](const Value& v) {
    return v.is_string() ? JsStringToNumber(v.str()) : v.number();
  };
  return number(a) == number(b);
}

Result<std::string> ToJson(const Value& value, const JsonOptions& options) {
  std::string out;
  KITE_RETURN_IF_ERROR(AppendJson(value, options, 0, &out));
  if (out.size() > options.max_bytes) return std::unexpected(TooLong(options.max_bytes).error());
  return out;
}

Result<Value> FromJson(const nlohmann::ordered_json& json) { return FromJsonAt(json, 0); }

}  // namespace kite::jinja
