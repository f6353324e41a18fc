// Methods of strings and dicts (`s.strip()`, `d.items()`) and the global functions.
#include <algorithm>
#include <cmath>
#include <ctime>

#include "base/utf8.h"
#include "chat/jinja/convert.h"
#include "chat/jinja/interpreter.h"
#include "chat/jinja/js_string.h"
#include "chat/jinja/sort.h"

namespace kite::jinja {
namespace {

constexpr std::string_view kStringMethods[] = {"upper",      "lower",  "strip",  "title",
                                               "capitalize", "rstrip", "lstrip", "startswith",
                                               "endswith",   "split",  "replace"};
constexpr std::string_view kObjectMethods[] = {"get", "items", "keys", "values", "dictsort"};

Value Method(const Value& self, std::string_view name) {
  return Value::MakeFunction(
      Function{Function::Kind::kMethod, std::string(name), std::make_shared<const Value>(self)});
}

bool IsWordByte(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

// String.prototype.replace(/\b\w/g, upper): the first ASCII word character of each word.
std::string TitleCase(std::string_view s) {
  std::string out(s);
  for (size_t i = 0; i < out.size(); ++i) {
    if (IsWordByte(out[i]) && (i == 0 || !IsWordByte(out[i - 1])) && out[i] >= 'a' && out[i] <= 'z')
      out[i] -= 32;
  }
  return out;
}

std::string Capitalize(std::string_view s) {
  if (s.empty()) return std::string();
  size_t length;
  const char32_t first = DecodeUtf8(s, 0, &length);
  if (first >= 0x10000) return std::string(s);
  return JsToUpper(s.substr(0, length)) + std::string(s.substr(length));
}

// Python's str.replace as the reference implements it; an empty `old` matches between code points.
Result<std::string> Replace(std::string_view s, std::string_view old, std::string_view replacement,
                            double count, size_t max_bytes) {
  const auto too_long = [&] {
    return MakeError(ErrorCode::kOutOfResources,
                     "text longer than " + std::to_string(max_bytes) + " bytes");
  };
  if (count == 0) return std::string(s);
  double remaining = count < 0 ? INFINITY : count;
  std::string out;
  if (old.empty()) {
    for (size_t pos = 0;;) {
      if (remaining > 0) {
        out += replacement;
        --remaining;
      }
      if (pos >= s.size()) break;
      size_t length;
      DecodeUtf8(s, pos, &length);
      out += s.substr(pos, length);
      pos += length;
      if (out.size() > max_bytes) return too_long();
    }
    return out;
  }
  size_t pos = 0;
  while (remaining > 0) {
    const size_t found = s.find(old, pos);
    if (found == std::string_view::npos) break;
    out += s.substr(pos, found - pos);
    out += replacement;
    pos = found + old.size();
    --remaining;
    if (out.size() > max_bytes) return too_long();
  }
  out += s.substr(pos);
  return out;
}

Result<Value> Split(Interpreter& interp, const std::string& s, const std::vector<Value>& args,
                    const Node& at) {
  const Value sep = args.size() > 0 ? args[0] : Value::None();
  if (!sep.is_string() && !sep.is_none())
    return interp.Fail(at, "sep argument must be a string or null");
  const Value maxsplit_value = args.size() > 1 ? args[1] : Value::Int(-1);
  if (maxsplit_value.kind() != ValueKind::kInt)
    return interp.Fail(at, "maxsplit argument must be a number");
  const double maxsplit = maxsplit_value.number();
  std::vector<std::string> parts;
  if (sep.is_none()) {
    const std::string_view text = TrimJs(s, true, false);
    for (size_t pos = 0; pos < text.size();) {
      size_t length;
      if (IsJsWhitespace(DecodeUtf8(text, pos, &length))) {
        pos += length;
        continue;
      }
      if (maxsplit != -1 && static_cast<double>(parts.size()) >= maxsplit) {
        parts.emplace_back(text.substr(pos));
        break;
      }
      size_t end = pos;
      while (end < text.size() && !IsJsWhitespace(DecodeUtf8(text, end, &length))) end += length;
      parts.emplace_back(text.substr(pos, end - pos));
      pos = end;
    }
  } else {
    const std::string& separator = sep.str();
    if (separator.empty()) return interp.Fail(at, "empty separator");
    for (size_t pos = 0;;) {
      const size_t found = s.find(separator, pos);
      parts.emplace_back(
          s.substr(pos, found == std::string::npos ? std::string::npos : found - pos));
      if (found == std::string::npos) break;
      pos = found + separator.size();
    }
    const double n = static_cast<double>(parts.size());
    if (maxsplit != -1 && n > maxsplit) {
      // Array.prototype.splice(maxsplit): a negative start counts from the end.
      const size_t keep =
          static_cast<size_t>(maxsplit < 0 ? std::max(n + maxsplit, 0.0) : maxsplit);
      std::string rest;
      for (size_t i = keep; i < parts.size(); ++i) rest += (i > keep ? separator : "") + parts[i];
      parts.resize(keep);
      parts.push_back(std::move(rest));
    }
  }
  std::vector<Value> items;
  for (std::string& part : parts) items.push_back(Value::String(std::move(part)));
  return interp.MakeList(at, std::move(items));
}

Result<Value> StringMethod(Interpreter& interp, const std::string& name, const std::string& s,
                           const std::vector<Value>& args, const Node& at) {
  if (name == "upper") return Value::String(JsToUpper(s));
  if (name == "lower") return Value::String(JsToLower(s));
  if (name == "strip") return Value::String(std::string(TrimJs(s, true, true)));
  if (name == "rstrip") return Value::String(std::string(TrimJs(s, false, true)));
  if (name == "lstrip") return Value::String(std::string(TrimJs(s, true, false)));
  if (name == "title") return Value::String(TitleCase(s));
  if (name == "capitalize") return Value::String(Capitalize(s));
  if (name == "startswith" || name == "endswith") {
    if (args.empty()) return interp.Fail(at, name + "() requires at least one argument");
    const auto matches = [&](const std::string& p) {
      return name == "startswith" ? s.starts_with(p) : s.ends_with(p);
    };
    if (args[0].is_string()) return Value::Bool(matches(args[0].str()));
    if (!args[0].is_array())
      return interp.Fail(at, name + "() argument must be a string or tuple of strings");
    for (const Value& item : args[0].items()) {
      if (!item.is_string()) return interp.Fail(at, name + "() tuple elements must be strings");
      if (matches(item.str())) return Value::Bool(true);
    }
    return Value::Bool(false);
  }
  if (name == "split") return Split(interp, s, args, at);
  // replace(old, new[, count]); a trailing keyword-arguments dict may carry count=.
  if (args.size() < 2) return interp.Fail(at, "replace() requires at least two arguments");
  if (!args[0].is_string() || !args[1].is_string())
    return interp.Fail(at, "replace() arguments must be strings");
  Value count = Value::None();
  if (args.size() > 2) {
    const Value* keyword = args[2].is_kwargs() ? args[2].Find("count") : nullptr;
    count = args[2].is_kwargs() ? (keyword ? *keyword : Value::None()) : args[2];
  }
  if (count.kind() != ValueKind::kInt && !count.is_none()) {
    return interp.Fail(at, "replace() count argument must be a number or null");
  }
  auto replaced = Replace(s, args[0].str(), args[1].str(), count.is_none() ? -1 : count.number(),
                          interp.limits().max_output_bytes);
  if (!replaced) return interp.Fail(at, replaced.error());
  return interp.MakeString(at, std::move(*replaced));
}

Result<Value> ObjectMethod(Interpreter& interp, const std::string& name, const Value& self,
                           std::vector<Value> args, const Node& at) {
  if (name == "get") {
    if (args.empty() || !args[0].is_string()) {
      return interp.Fail(at, std::string("Object key must be a string: got ") +
                                 (args.empty() ? "nothing" : args[0].TypeName()));
    }
    if (const Value* found = self.Find(args[0].str())) return *found;
    return args.size() > 1 ? args[1] : Value::None();
  }
  if (name == "keys" || name == "values" || name == "items") {
    std::vector<Value> out;
    for (const auto& [key, value] : self.entries()) {
      if (name == "keys") out.push_back(Value::String(key));
      if (name == "values") out.push_back(value);
      if (name == "items") out.push_back(Value::Array({Value::String(key), value}));
    }
    return Value::Array(std::move(out));
  }
  // dictsort(case_sensitive=false, by='key', reverse=false)
  Object kwargs;
  if (!args.empty() && args.back().is_kwargs()) {
    kwargs = args.back().entries();
    args.pop_back();
  }
  const auto argument = [&](size_t i, std::string_view key, Value fallback) {
    if (i < args.size()) return args[i];
    for (const auto& entry : kwargs) {
      if (entry.first == key) return entry.second;
    }
    return fallback;
  };
  const Value case_sensitive = argument(0, "case_sensitive", Value::Bool(false));
  const Value by = argument(1, "by", Value::String("key"));
  const Value reverse = argument(2, "reverse", Value::Bool(false));
  if (case_sensitive.kind() != ValueKind::kBool)
    return interp.Fail(at, "case_sensitive must be a boolean");
  if (!by.is_string()) return interp.Fail(at, "by must be a string");
  if (by.str() != "key" && by.str() != "value")
    return interp.Fail(at, "by must be either 'key' or 'value'");
  if (reverse.kind() != ValueKind::kBool) return interp.Fail(at, "reverse must be a boolean");
  std::vector<Value> pairs, keys;
  for (const auto& [key, value] : self.entries()) {
    pairs.push_back(Value::Array({Value::String(key), value}));
    keys.push_back(by.str() == "key" ? Value::String(key) : value);
  }
  auto sorted = SortValues(pairs, keys, case_sensitive.boolean(), reverse.boolean());
  if (!sorted) return interp.Fail(at, sorted.error());
  return Value::Array(std::move(*sorted));
}

Result<Value> Range(Interpreter& interp, const std::vector<Value>& args, const Node& at) {
  for (const Value& arg : args) {
    if (!arg.is_number() && arg.kind() != ValueKind::kBool)
      return interp.Fail(at, "range() arguments must be numbers");
  }
  double start = 0, stop = 0, step = 1;
  if (args.size() == 1) {
    stop = args[0].number();
  } else if (args.size() >= 2) {
    start = args[0].number();
    stop = args[1].number();
    if (args.size() >= 3) step = args[2].number();
  }
  if (step == 0) return interp.Fail(at, "range() step must not be zero");
  const double count = std::ceil((stop - start) / step);
  if (count > static_cast<double>(interp.limits().max_list_items)) {
    return MakeError(ErrorCode::kOutOfResources,
                     interp
                         .Fail(at, "range() longer than " +
                                       std::to_string(interp.limits().max_list_items) + " items")
                         .error()
                         .message);
  }
  std::vector<Value> items;
  for (double i = start; step > 0 ? i < stop : i > stop; i += step) {
    // A float step below the spacing of doubles never advances: stop at the list limit.
    if (items.size() >= interp.limits().max_list_items)
      return interp.Fail(at, "range() does not end");
    items.push_back(std::trunc(i) == i ? Value::Int(i) : Value::Float(i));
  }
  return Value::Array(std::move(items));
}

Result<Value> MakeNamespace(Interpreter& interp, std::vector<Value> args, const Node& at) {
  Object kwargs;
  if (!args.empty() && args.back().is_kwargs()) {
    kwargs = args.back().entries();
    args.pop_back();
  }
  if (args.size() > 1)
    return interp.Fail(at,
                       "namespace expected at most 1 argument, got " + std::to_string(args.size()));
  Object entries;
  const auto set = [&](const std::string& key, const Value& value) {
    auto it =
        std::find_if(entries.begin(), entries.end(), [&](const auto& e) { return e.first == key; });
    if (it != entries.end())
      it->second = value;
    else
      entries.emplace_back(key, value);
  };
  if (args.size() == 1) {
    if (args[0].is_object()) {
      for (const auto& [key, value] : args[0].entries()) set(key, value);
    } else if (args[0].is_array()) {
      for (const Value& pair : args[0].items()) {
        if (!pair.is_array() || pair.items().size() != 2) {
          return interp.Fail(at,
                             "namespace expected an object or an iterable of [key, value] pairs");
        }
        if (!pair.items()[0].is_string()) return interp.Fail(at, "namespace keys must be strings");
        set(pair.items()[0].str(), pair.items()[1]);
      }
    } else {
      return interp.Fail(at, std::string("'") + args[0].TypeName() + "' object is not iterable");
    }
  }
  for (const auto& [key, value] : kwargs) set(key, value);
  for (const auto& [key, value] : entries) {
    if (value.ContainsNamespace())
      return interp.Fail(at, "a namespace attribute cannot hold a namespace");
  }
  return Value::Namespace(std::move(entries));
}

// Python's strftime for the directives the reference supports, in local time.
std::string StrftimeNow(std::string_view format) {
  static constexpr const char* kMonths[] = {"January",   "February", "March",    "April",
                                            "May",       "June",     "July",     "August",
                                            "September", "October",  "November", "December"};
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  const auto two = [](int n) { return (n < 10 ? "0" : "") + std::to_string(n); };
  std::string out;
  for (size_t i = 0; i < format.size(); ++i) {
    if (format[i] != '%' || i + 1 >= format.size()) {
      out += format[i];
      continue;
    }
    switch (format[i + 1]) {
      case 'Y':
        out += std::to_string(local.tm_year + 1900);
        break;
      case 'm':
        out += two(local.tm_mon + 1);
        break;
      case 'd':
        out += two(local.tm_mday);
        break;
      case 'b':
        out += std::string(kMonths[local.tm_mon]).substr(0, 3);
        break;
      case 'B':
        out += kMonths[local.tm_mon];
        break;
      case 'H':
        out += two(local.tm_hour);
        break;
      case 'M':
        out += two(local.tm_min);
        break;
      case '%':
        out += '%';
        break;
      default:
        out += format.substr(i, 2);
        break;
    }
    ++i;
  }
  return out;
}

Value Global(std::string_view name) {
  return Value::MakeFunction(Function{Function::Kind::kGlobal, std::string(name), nullptr});
}

}  // namespace

Value BuiltinAttribute(const Value& object, const std::string& name) {
  if (object.is_string()) {
    if (name == "length") return Value::Int(static_cast<double>(Utf16Length(object.str())));
    for (std::string_view method : kStringMethods) {
      if (method == name) return Method(object, name);
    }
  } else if (object.is_object()) {
    for (std::string_view method : kObjectMethods) {
      if (method == name) return Method(object, name);
    }
  } else if (object.is_array() && name == "length") {
    return Value::Int(static_cast<double>(object.items().size()));
  }
  return Value();
}

Result<Value> CallBuiltin(Interpreter& interp, const Function& function, std::vector<Value> args,
                          const Node& at) {
  if (function.kind == Function::Kind::kMethod) {
    const Value& self = *function.self;
    if (self.is_string()) return StringMethod(interp, function.name, self.str(), args, at);
    return ObjectMethod(interp, function.name, self, std::move(args), at);
  }
  if (function.name == "namespace") return MakeNamespace(interp, std::move(args), at);
  if (function.name == "range") return Range(interp, args, at);
  if (function.name == "raise_exception") {
    std::string message;
    if (!args.empty()) {
      auto text = JsString(args[0], interp.limits().max_output_bytes);
      message = text ? *text : "raise_exception";
    }
    return interp.Fail(at, message);
  }
  // strftime_now(format)
  if (args.empty() || !args[0].is_string())
    return interp.Fail(at, "strftime_now() needs a format string");
  return Value::String(StrftimeNow(args[0].str()));
}

void DeclareGlobals(Environment* env) {
  env->Set("namespace", Global("namespace"));
  env->Set("false", Value::Bool(false));
  env->Set("true", Value::Bool(true));
  env->Set("none", Value::None());
  env->Set("raise_exception", Global("raise_exception"));
  env->Set("range", Global("range"));
  env->Set("strftime_now", Global("strftime_now"));
  env->Set("True", Value::Bool(true));
  env->Set("False", Value::Bool(false));
  env->Set("None", Value::None());
}

}  // namespace kite::jinja
