// The filters of @huggingface/jinja: `x | name` picks by the operand's type, `x | name(args)`
// handles a few filters for every type first.
#include <algorithm>
#include <cmath>
#include <unordered_set>

#include "base/utf8.h"
#include "chat/jinja/convert.h"
#include "chat/jinja/interpreter.h"
#include "chat/jinja/js_string.h"
#include "chat/jinja/sort.h"

namespace kite::jinja {
namespace {

using Args = std::pair<std::vector<Value>, Object>;

const Value* Keyword(const Object& kwargs, std::string_view name) {
  for (const auto& [key, value] : kwargs) {
    if (key == name) return &value;
  }
  return nullptr;
}

// args[i], else kwargs[name], else `fallback`.
Value Argument(const Args& args, size_t i, std::string_view name, Value fallback) {
  if (i < args.first.size()) return args.first[i];
  if (const Value* value = Keyword(args.second, name)) return *value;
  return fallback;
}

// Truthiness of the underlying JavaScript value: every list or dict object is true.
bool JsTruthy(const Value& v) { return v.is_array() || v.has_entries() || v.Truthy(); }

Status TooLong(size_t max_bytes) {
  return MakeError(ErrorCode::kOutOfResources,
                   "text longer than " + std::to_string(max_bytes) + " bytes");
}

// Array.prototype.join: null and undefined items join as empty text.
Result<std::string> Join(const std::vector<Value>& items, const std::string& separator,
                         size_t max_bytes) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += separator;
    if (!items[i].is_none() && !items[i].is_undefined())
      out += KITE_TRY(JsString(items[i], max_bytes));
    if (out.size() > max_bytes) return std::unexpected(TooLong(max_bytes).error());
  }
  return out;
}

// Joins the code points of a string.
Result<std::string> JoinCodePoints(std::string_view text, const std::string& separator,
                                   size_t max_bytes) {
  std::string out;
  for (size_t pos = 0; pos < text.size();) {
    size_t length;
    DecodeUtf8(text, pos, &length);
    if (pos > 0) out += separator;
    out += text.substr(pos, length);
    pos += length;
    if (out.size() > max_bytes) return std::unexpected(TooLong(max_bytes).error());
  }
  return out;
}

std::string Indent(std::string_view text, size_t width, bool first, bool blank) {
  std::string out;
  const std::string pad(width, ' ');
  size_t line = 0;
  for (size_t start = 0;; ++line) {
    const size_t end = text.find('\n', start);
    const std::string_view piece =
        text.substr(start, end == std::string_view::npos ? text.npos : end - start);
    if (line > 0) out += '\n';
    if (!((!first && line == 0) || (!blank && piece.empty()))) out += pad;
    out += piece;
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return out;
}

// Identity key for `unique` (JavaScript SameValueZero on the underlying values).
std::string UniqueKey(const Value& v) {
  switch (v.kind()) {
    case ValueKind::kUndefined:
      return "u";
    case ValueKind::kNone:
      return "z";
    case ValueKind::kBool:
      return v.boolean() ? "b1" : "b0";
    case ValueKind::kInt:
    case ValueKind::kFloat: {
      const double n = v.number() == 0 ? 0.0 : v.number();  // -0 and 0 are the same
      return "n" + FormatJsNumber(n);
    }
    case ValueKind::kString:
      return "s" + v.str();
    default:
      return "p" + std::to_string(reinterpret_cast<uintptr_t>(v.identity()));
  }
}

Result<Value> TypedFilter(Interpreter& interp, const Value& operand, const std::string& name,
                          const Node& at, Environment& env) {
  const auto error = [&](const char* type) {
    return interp.Fail(at, std::string("Unknown ") + type + " filter: " + name);
  };
  const auto wrap = [&](auto result) -> Result<Value> {
    if (!result) return interp.Fail(at, result.error());
    return interp.MakeString(at, std::move(*result));
  };
  if (operand.is_array()) {
    const auto& items = operand.items();
    if (name == "list") return operand;
    if (name == "first" || name == "last") {
      if (items.empty()) return interp.Fail(at, name + " of an empty list");
      return name == "first" ? items.front() : items.back();
    }
    if (name == "length") return Value::Int(static_cast<double>(items.size()));
    if (name == "reverse") return Value::Array(std::vector<Value>(items.rbegin(), items.rend()));
    if (name == "sort") {
      auto sorted = SortValues(items, items, false, false);
      if (!sorted) return interp.Fail(at, sorted.error());
      return Value::Array(std::move(*sorted));
    }
    if (name == "join") return wrap(Join(items, "", interp.limits().max_output_bytes));
    if (name == "string") {
      JsonOptions options;
      options.undefined_as_null = false;
      options.max_bytes = interp.limits().max_output_bytes;
      return wrap(ToJson(operand, options));
    }
    if (name == "unique") {
      std::unordered_set<std::string> seen;
      std::vector<Value> out;
      for (const Value& item : items) {
        if (seen.insert(UniqueKey(item)).second) out.push_back(item);
      }
      return Value::Array(std::move(out));
    }
    return error("ArrayValue");
  }
  if (operand.is_string()) {
    const std::string& s = operand.str();
    if (name == "length") return Value::Int(static_cast<double>(Utf16Length(s)));
    if (name == "upper") return Value::String(JsToUpper(s));
    if (name == "lower") return Value::String(JsToLower(s));
    if (name == "title" || name == "capitalize")
      return interp.Call(BuiltinAttribute(operand, name), {}, {}, env, at);
    if (name == "trim") return Value::String(std::string(TrimJs(s, true, true)));
    if (name == "indent") return interp.MakeString(at, Indent(s, 4, false, false));
    if (name == "join" || name == "string") return operand;
    if (name == "int") {
      const double n = JsParseInt(s);
      return Value::Int(std::isnan(n) ? 0 : n);
    }
    if (name == "float") {
      const double n = JsParseFloat(s);
      return Value::Float(std::isnan(n) ? 0 : n);
    }
    return error("StringValue");
  }
  if (operand.is_number()) {
    const bool is_int = operand.kind() == ValueKind::kInt;
    if (name == "abs")
      return is_int ? Value::Int(std::fabs(operand.number()))
                    : Value::Float(std::fabs(operand.number()));
    if (name == "int") return Value::Int(std::floor(operand.number()));
    if (name == "float") return Value::Float(operand.number());
    if (name == "string") return wrap(ToOutput(operand, interp.limits().max_output_bytes));
    return error("NumericValue");
  }
  if (operand.is_object()) {
    if (name == "items") return interp.Call(BuiltinAttribute(operand, "items"), {}, {}, env, at);
    if (name == "length") return Value::Int(static_cast<double>(operand.entries().size()));
    const Value builtin = BuiltinAttribute(operand, name);
    if (builtin.kind() == ValueKind::kFunction) return interp.Call(builtin, {}, {}, env, at);
    return error("ObjectValue");
  }
  if (operand.kind() == ValueKind::kBool) {
    const bool b = operand.boolean();
    if (name == "bool") return operand;
    if (name == "int") return Value::Int(b ? 1 : 0);
    if (name == "float") return Value::Float(b ? 1 : 0);
    if (name == "string") return Value::String(b ? "true" : "false");
    return error("BooleanValue");
  }
  return interp.Fail(at, "Cannot apply filter \"" + name + "\" to type: " + operand.TypeName());
}

Result<Value> ToJsonFilter(Interpreter& interp, const Value& operand, const Object& kwargs,
                           const Node& at) {
  JsonOptions options;
  if (const Value* indent = Keyword(kwargs, "indent"); indent && !indent->is_none()) {
    if (indent->kind() != ValueKind::kInt)
      return interp.Fail(at, "If set, indent must be a number");
    if (indent->number() < 0 || indent->number() > 1024)
      return interp.Fail(at, "indent must be between 0 and 1024");
    options.indent = static_cast<int>(indent->number());
  }
  for (auto [key, flag] : {std::pair{"ensure_ascii", &options.ensure_ascii},
                           std::pair{"sort_keys", &options.sort_keys}}) {
    if (const Value* v = Keyword(kwargs, key)) {
      if (v->kind() != ValueKind::kBool)
        return interp.Fail(at, std::string("If set, ") + key + " must be a boolean");
      *flag = v->boolean();
    }
  }
  if (const Value* separators = Keyword(kwargs, "separators");
      separators && !separators->is_none()) {
    const bool pair = separators->is_array() && separators->items().size() == 2 &&
                      separators->items()[0].is_string() && separators->items()[1].is_string();
    if (!pair) return interp.Fail(at, "separators must be a tuple of two strings");
    options.separators = {separators->items()[0].str(), separators->items()[1].str()};
  }
  options.max_bytes = interp.limits().max_output_bytes;
  auto json = ToJson(operand, options);
  if (!json) return interp.Fail(at, json.error());
  return interp.MakeString(at, std::move(*json));
}

// Dotted attribute paths for sort(attribute=...) and map(attribute=...): "a.b", "items.0".
Value AttributePath(const Value& item, std::string_view path) {
  Value value = item;
  size_t start = 0;
  while (true) {
    const size_t end = path.find('.', start);
    const std::string part(
        path.substr(start, end == std::string_view::npos ? path.npos : end - start));
    if (value.has_entries()) {
      const Value* found = value.Find(part);
      value = found ? *found : Value();
    } else if (value.is_array()) {
      const double index = JsParseInt(part);
      if (!(index >= 0 && index < static_cast<double>(value.items().size()))) return Value();
      value = Value(value.items()[static_cast<size_t>(index)]);
    } else {
      return Value();
    }
    if (end == std::string_view::npos) return value;
    start = end + 1;
  }
}

Result<Value> ArrayCallFilter(Interpreter& interp, const Value& operand, const std::string& name,
                              const Node& call, Environment& env) {
  const auto& items = operand.items();
  if (name == "sort") {
    const Args args = KITE_TRY(interp.EvalArguments(call.args, env));
    const Value reverse = Argument(args, 0, "reverse", Value::Bool(false));
    const Value case_sensitive = Argument(args, 1, "case_sensitive", Value::Bool(false));
    const Value attribute = Argument(args, 2, "attribute", Value::None());
    if (reverse.kind() != ValueKind::kBool) return interp.Fail(call, "reverse must be a boolean");
    if (case_sensitive.kind() != ValueKind::kBool)
      return interp.Fail(call, "case_sensitive must be a boolean");
    if (!attribute.is_string() && attribute.kind() != ValueKind::kInt && !attribute.is_none()) {
      return interp.Fail(call, "attribute must be a string, integer, or null");
    }
    std::vector<Value> keys = items;
    if (!attribute.is_none()) {
      const std::string path =
          attribute.is_string() ? attribute.str() : FormatJsNumber(attribute.number());
      for (Value& key : keys) key = AttributePath(key, path);
    }
    auto sorted = SortValues(items, keys, case_sensitive.boolean(), reverse.boolean());
    if (!sorted) return interp.Fail(call, sorted.error());
    return Value::Array(std::move(*sorted));
  }
  if (name == "selectattr" || name == "rejectattr") {
    const bool select = name == "selectattr";
    for (const Value& item : items) {
      if (!item.has_entries())
        return interp.Fail(call, "`" + name + "` can only be applied to array of objects");
    }
    for (const NodePtr& arg : call.args) {
      if (arg->kind != NodeKind::kString)
        return interp.Fail(call, "arguments of `" + name + "` must be strings");
    }
    if (call.args.empty()) return interp.Fail(call, "`" + name + "` needs an attribute name");
    const std::string& attribute = call.args[0]->str;
    std::optional<std::string> test;
    if (call.args.size() > 1) {
      test = call.args[1]->str;
      if (!IsKnownTest(*test)) return interp.Fail(call, "Unknown test: " + *test);
    }
    const std::optional<Value> argument =
        call.args.size() > 2 ? std::optional<Value>(Value::String(call.args[2]->str))
                             : std::nullopt;
    std::vector<Value> out;
    for (const Value& item : items) {
      const Value* found = item.Find(attribute);
      bool result = false;
      if (found) {
        if (test) {
          auto passed = ApplyTest(*test, *found, argument ? &*argument : nullptr);
          if (!passed) return interp.Fail(call, passed.error());
          result = *passed;
        } else {
          result = found->Truthy();
        }
      }
      if (result == select) out.push_back(item);
    }
    return Value::Array(std::move(out));
  }
  if (name == "map") {
    const Args args = KITE_TRY(interp.EvalArguments(call.args, env));
    const Value* attribute = Keyword(args.second, "attribute");
    if (!attribute)
      return interp.Fail(call,
                         "`map` expressions without `attribute` set are not currently supported.");
    if (!attribute->is_string()) return interp.Fail(call, "attribute must be a string");
    const Value* fallback = Keyword(args.second, "default");
    std::vector<Value> out;
    for (const Value& item : items) {
      if (!item.has_entries()) return interp.Fail(call, "items in map must be an object");
      Value value = AttributePath(item, attribute->str());
      out.push_back(value.is_undefined() && fallback ? *fallback : value);
    }
    return Value::Array(std::move(out));
  }
  return interp.Fail(call, "Unknown ArrayValue filter: " + name);
}

Result<Value> CallFilter(Interpreter& interp, const Value& operand, const std::string& name,
                         const Node& call, Environment& env) {
  if (name == "tojson") {
    const Args args = KITE_TRY(interp.EvalArguments(call.args, env));
    return ToJsonFilter(interp, operand, args.second, call);
  }
  if (name == "join") {
    if (!operand.is_string() && !operand.is_array()) {
      return interp.Fail(
          call, "Cannot apply filter \"join\" to type: " + std::string(operand.TypeName()));
    }
    const Args args = KITE_TRY(interp.EvalArguments(call.args, env));
    const Value separator = Argument(args, 0, "separator", Value::String(""));
    if (!separator.is_string()) return interp.Fail(call, "separator must be a string");
    const size_t max_bytes = interp.limits().max_output_bytes;
    auto joined = operand.is_string() ? JoinCodePoints(operand.str(), separator.str(), max_bytes)
                                      : Join(operand.items(), separator.str(), max_bytes);
    if (!joined) return interp.Fail(call, joined.error());
    return interp.MakeString(call, std::move(*joined));
  }
  if (name == "int" || name == "float") {
    const Args args = KITE_TRY(interp.EvalArguments(call.args, env));
    const bool is_int = name == "int";
    const Value fallback = Argument(args, 0, "default", is_int ? Value::Int(0) : Value::Float(0));
    if (operand.is_string()) {
      const double n = is_int ? JsParseInt(operand.str()) : JsParseFloat(operand.str());
      if (std::isnan(n)) return fallback;
      return is_int ? Value::Int(n) : Value::Float(n);
    }
    if (operand.is_number()) return operand;
    if (operand.kind() == ValueKind::kBool) {
      return is_int ? Value::Int(operand.boolean()) : Value::Float(operand.boolean());
    }
    return interp.Fail(call, "Cannot apply filter \"" + name + "\" to type: " + operand.TypeName());
  }
  if (name == "default") {
    const Args args = KITE_TRY(interp.EvalArguments(call.args, env));
    const Value fallback = args.first.empty() ? Value::String("") : args.first[0];
    const Value boolean = Argument(args, 1, "boolean", Value::Bool(false));
    if (boolean.kind() != ValueKind::kBool)
      return interp.Fail(call, "`default` filter flag must be a boolean");
    if (operand.is_undefined() || (boolean.boolean() && !operand.Truthy())) return fallback;
    return operand;
  }
  if (operand.is_array()) return ArrayCallFilter(interp, operand, name, call, env);
  if (operand.is_string()) {
    if (name == "indent") {
      const Args args = KITE_TRY(interp.EvalArguments(call.args, env));
      const Value width = Argument(args, 0, "width", Value::Int(4));
      if (width.kind() != ValueKind::kInt) return interp.Fail(call, "width must be a number");
      if (width.number() < 0 ||
          width.number() > static_cast<double>(interp.limits().max_output_bytes)) {
        return interp.Fail(call, "indent width out of range");
      }
      const bool first = JsTruthy(Argument(args, 1, "first", Value::Bool(false)));
      const bool blank = JsTruthy(Argument(args, 2, "blank", Value::Bool(false)));
      const size_t width_bytes = static_cast<size_t>(width.number());
      const size_t lines = std::count(operand.str().begin(), operand.str().end(), '\n') + 1;
      if (lines * width_bytes > interp.limits().max_output_bytes) {
        return interp.Fail(call, TooLong(interp.limits().max_output_bytes).error());
      }
      return interp.MakeString(call, Indent(operand.str(), width_bytes, first, blank));
    }
    if (name == "replace") {
      auto [args, kwargs] = KITE_TRY(interp.EvalArguments(call.args, env));
      args.push_back(Value::MakeObject(std::move(kwargs), /*keyword_arguments=*/true));
      return interp.Call(BuiltinAttribute(operand, "replace"), std::move(args), {}, env, call);
    }
    return interp.Fail(call, "Unknown StringValue filter: " + name);
  }
  if (operand.is_object()) {
    const Value builtin = BuiltinAttribute(operand, name);
    if (builtin.kind() != ValueKind::kFunction)
      return interp.Fail(call, "Unknown ObjectValue filter: " + name);
    auto [args, kwargs] = KITE_TRY(interp.EvalArguments(call.args, env));
    return interp.Call(builtin, std::move(args), std::move(kwargs), env, call);
  }
  return interp.Fail(call, "Cannot apply filter \"" + name + "\" to type: " + operand.TypeName());
}

}  // namespace

Result<Value> ApplyFilter(Interpreter& interp, const Value& operand, const Node& filter,
                          Environment& env) {
  if (filter.kind == NodeKind::kIdentifier) {
    if (filter.str == "safe") return operand;
    if (filter.str == "tojson") return ToJsonFilter(interp, operand, {}, filter);
    return TypedFilter(interp, operand, filter.str, filter, env);
  }
  if (filter.kind == NodeKind::kCall && filter.a->kind == NodeKind::kIdentifier) {
    return CallFilter(interp, operand, filter.a->str, filter, env);
  }
  return interp.Fail(filter, "Unknown filter");
}

}  // namespace kite::jinja
