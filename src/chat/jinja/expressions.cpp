// Expression evaluation: literals, names, attribute and index access, slices and operators.
#include <algorithm>
#include <cmath>

#include "base/utf8.h"
#include "chat/jinja/convert.h"
#include "chat/jinja/interpreter.h"

namespace kite::jinja {
namespace {

bool NumericLike(const Value& v) { return v.is_number() || v.kind() == ValueKind::kBool; }

// Byte offsets where the code points of `text` start, plus its end.
std::vector<size_t> CodePointStarts(std::string_view text) {
  std::vector<size_t> starts;
  for (size_t pos = 0; pos < text.size();) {
    starts.push_back(pos);
    size_t length;
    DecodeUtf8(text, pos, &length);
    pos += length;
  }
  starts.push_back(text.size());
  return starts;
}

// JavaScript's Array.prototype.at on UTF-16 units; a lone surrogate half comes out as U+FFFD.
Value StringAt(const std::string& text, double index) {
  const double units = static_cast<double>([&] {
    size_t n = 0;
    for (size_t pos = 0; pos < text.size();) {
      size_t length;
      n += DecodeUtf8(text, pos, &length) >= 0x10000 ? 2 : 1;
      pos += length;
    }
    return n;
  }());
  index = std::trunc(index);
  if (index < 0) index += units;
  if (!(index >= 0 && index < units)) return Value();
  double unit = 0;
  for (size_t pos = 0; pos < text.size();) {
    size_t length;
    const char32_t cp = DecodeUtf8(text, pos, &length);
    const double width = cp >= 0x10000 ? 2 : 1;
    if (index < unit + width) {
      return width == 2 ? Value::String("\xEF\xBF\xBD") : Value::String(text.substr(pos, length));
    }
    unit += width;
    pos += length;
  }
  return Value();
}

// Python-style slice bounds, as the reference's `slice` helper computes them.
template <typename T>
std::vector<T> SliceOf(const std::vector<T>& items, std::optional<double> start,
                       std::optional<double> stop, double step) {
  const double n = static_cast<double>(items.size());
  const double direction = step > 0 ? 1 : step < 0 ? -1 : 0;
  double from, to;
  if (direction >= 0) {
    from = start.value_or(0);
    from = from < 0 ? std::max(n + from, 0.0) : std::min(from, n);
    to = stop.value_or(n);
    to = to < 0 ? std::max(n + to, 0.0) : std::min(to, n);
  } else {
    from = start.value_or(n - 1);
    from = from < 0 ? std::max(n + from, -1.0) : std::min(from, n - 1);
    to = stop.value_or(-1);
    to = to < -1 ? std::max(n + to, -1.0) : std::min(to, n - 1);
  }
  std::vector<T> out;
  if (direction == 0) return out;
  for (double i = from; direction * i < direction * to; i += step)
    out.push_back(items[static_cast<size_t>(i)]);
  return out;
}

}  // namespace

Result<Value> Interpreter::Eval(const Node& node, Environment& env) {
  KITE_RETURN_IF_ERROR(Step(node));
  switch (node.kind) {
    case NodeKind::kInt:
      return Value::Int(node.number);
    case NodeKind::kFloat:
      return Value::Float(node.number);
    case NodeKind::kString:
      return Value::String(node.str);
    case NodeKind::kIdentifier: {
      const Value* value = env.Lookup(node.str);
      return value ? *value : Value();
    }
    case NodeKind::kArray:
    case NodeKind::kTuple: {
      std::vector<Value> items;
      for (const NodePtr& item : node.args) items.push_back(KITE_TRY(Eval(*item, env)));
      return MakeList(node, std::move(items), node.kind == NodeKind::kTuple);
    }
    case NodeKind::kDict:
      return EvalDict(node, env);
    case NodeKind::kMember:
      return EvalMember(node, env);
    case NodeKind::kCall: {
      auto [args, kwargs] = KITE_TRY(EvalArguments(node.args, env));
      const Value callee = KITE_TRY(Eval(*node.a, env));
      return Call(callee, std::move(args), std::move(kwargs), env, node);
    }
    case NodeKind::kBinary:
      return EvalBinary(node, env);
    case NodeKind::kUnary:
      return EvalUnary(node, env);
    case NodeKind::kFilter: {
      const Value operand = KITE_TRY(Eval(*node.a, env));
      return ApplyFilter(*this, operand, *node.b, env);
    }
    case NodeKind::kTest: {
      const Value operand = KITE_TRY(Eval(*node.a, env));
      if (!IsKnownTest(node.str)) return Fail(node, "Unknown test: " + node.str);
      auto result = ApplyTest(node.str, operand, nullptr);
      if (!result) return Fail(node, result.error());
      return Value::Bool(*result != node.negated);
    }
    case NodeKind::kSelect: {
      if (!KITE_TRY(Eval(*node.b, env)).Truthy()) return Value();
      return Eval(*node.a, env);
    }
    case NodeKind::kTernary:
      return Eval(KITE_TRY(Eval(*node.a, env)).Truthy() ? *node.b : *node.c, env);
    default:
      return Fail(node, "this cannot be evaluated as an expression");
  }
}

Result<Value> Interpreter::EvalDict(const Node& node, Environment& env) {
  Object entries;
  for (size_t i = 0; i < node.args.size(); ++i) {
    const Value key = KITE_TRY(Eval(*node.args[i], env));
    if (!key.is_string())
      return Fail(*node.args[i], std::string("Object keys must be strings: got ") + key.TypeName());
    Value value = KITE_TRY(Eval(*node.alternate[i], env));
    auto it = std::find_if(entries.begin(), entries.end(),
                           [&](const auto& e) { return e.first == key.str(); });
    if (it != entries.end()) {
      it->second = std::move(value);
    } else {
      entries.emplace_back(key.str(), std::move(value));
    }
  }
  if (auto status = CheckDepth(entries); !status) return Fail(node, status.error());
  return Value::MakeObject(std::move(entries));
}

Result<Value> Interpreter::EvalMember(const Node& node, Environment& env) {
  const Value object = KITE_TRY(Eval(*node.a, env));
  Value property;
  if (node.computed) {
    if (node.b->kind == NodeKind::kSlice) return EvalSlice(object, *node.b, env);
    property = KITE_TRY(Eval(*node.b, env));
  } else if (node.b->kind == NodeKind::kInt) {
    property = Value::Int(node.b->number);
  } else {
    property = Value::String(node.b->str);
  }

  if (object.has_entries()) {
    if (!property.is_string()) {
      return Fail(
          node, std::string("Cannot access property with non-string: got ") + property.TypeName());
    }
    if (const Value* found = object.Find(property.str())) return *found;
    return object.is_object() ? BuiltinAttribute(object, property.str()) : Value();
  }
  if (object.is_array() || object.is_string()) {
    if (property.kind() == ValueKind::kInt) {
      if (object.is_string()) return StringAt(object.str(), property.number());
      const double n = static_cast<double>(object.items().size());
      double index = std::trunc(property.number());
      if (index < 0) index += n;
      if (!(index >= 0 && index < n)) return Value();
      return object.items()[static_cast<size_t>(index)];
    }
    if (property.is_string()) return BuiltinAttribute(object, property.str());
    return Fail(node, std::string("Cannot access property with non-string/non-number: got ") +
                          property.TypeName());
  }
  if (!property.is_string()) {
    return Fail(node,
                std::string("Cannot access property with non-string: got ") + property.TypeName());
  }
  return Value();
}

Result<Value> Interpreter::EvalSlice(const Value& object, const Node& slice, Environment& env) {
  if (!object.is_array() && !object.is_string())
    return Fail(slice, "Slice object must be an array or string");
  std::optional<double> bounds[3];
  const Node* parts[3] = {slice.a.get(), slice.b.get(), slice.c.get()};
  for (int i = 0; i < 3; ++i) {
    if (!parts[i]) continue;
    const Value bound = KITE_TRY(Eval(*parts[i], env));
    if (bound.is_undefined()) continue;
    if (bound.kind() != ValueKind::kInt)
      return Fail(*parts[i], "Slice indices must be integers or undefined");
    bounds[i] = bound.number();
  }
  const double step = bounds[2].value_or(1);
  if (object.is_array())
    return MakeList(slice, SliceOf(object.items(), bounds[0], bounds[1], step));
  // Slice the indices of the code points, then copy those code points.
  const std::string& text = object.str();
  const std::vector<size_t> starts = CodePointStarts(text);
  std::vector<size_t> indices(starts.size() - 1);
  for (size_t i = 0; i < indices.size(); ++i) indices[i] = i;
  std::string out;
  for (size_t i : SliceOf(indices, bounds[0], bounds[1], step)) {
    out.append(text, starts[i], starts[i + 1] - starts[i]);
  }
  return Value::String(std::move(out));
}

Result<Value> Interpreter::EvalBinary(const Node& node, Environment& env) {
  const std::string& op = node.str;
  const Value left = KITE_TRY(Eval(*node.a, env));
  if (op == "and") return left.Truthy() ? Eval(*node.b, env) : left;
  if (op == "or") return left.Truthy() ? left : Eval(*node.b, env);
  const Value right = KITE_TRY(Eval(*node.b, env));
  const auto fail_on = [&](const Error& e) { return Fail(node, e); };

  if (op == "==" || op == "!=") {
    auto equal = LooseEquals(left, right, limits_.max_output_bytes);
    if (!equal) return fail_on(equal.error());
    return Value::Bool(*equal == (op == "=="));
  }
  if (left.is_undefined() || right.is_undefined()) {
    if (right.is_undefined() && (op == "in" || op == "not in")) return Value::Bool(op == "not in");
    return Fail(node, "Cannot perform operation " + op + " on undefined values");
  }
  if (left.is_none() || right.is_none())
    return Fail(node, "Cannot perform operation on null values");
  if (op == "~") {
    auto a = JsString(left, limits_.max_output_bytes),
         b = JsString(right, limits_.max_output_bytes);
    if (!a) return fail_on(a.error());
    if (!b) return fail_on(b.error());
    return MakeString(node, *a + *b);
  }
  if (op == "**" && NumericLike(left) && NumericLike(right)) {
    const double a = left.number(), b = right.number();
    if (a == 0 && b < 0) return Fail(node, "0.0 cannot be raised to a negative power");
    // JavaScript: 1 ** ±Infinity is NaN, where C's pow gives 1.
    const double result = (std::fabs(a) == 1 && std::isinf(b)) ? NAN : std::pow(a, b);
    if (!std::isfinite(result))
      return Fail(node, "Exponentiation result is not a finite real number");
    const bool is_float =
        left.kind() == ValueKind::kFloat || right.kind() == ValueKind::kFloat || b < 0;
    return is_float ? Value::Float(result) : Value::Int(result);
  }
  if (left.is_number() && right.is_number()) {
    const double a = left.number(), b = right.number();
    const bool is_float = left.kind() == ValueKind::kFloat || right.kind() == ValueKind::kFloat;
    const auto number = [&](double v) { return is_float ? Value::Float(v) : Value::Int(v); };
    if (op == "+") return number(a + b);
    if (op == "-") return number(a - b);
    if (op == "*") return number(a * b);
    if (op == "/") return Value::Float(a / b);
    if (op == "//") return number(std::floor(a / b));
    if (op == "%") return number(std::fmod(a, b));
    if (op == "<") return Value::Bool(a < b);
    if (op == ">") return Value::Bool(a > b);
    if (op == "<=") return Value::Bool(a <= b);
    if (op == ">=") return Value::Bool(a >= b);
  } else if (left.is_array() && right.is_array()) {
    if (op == "+") {
      if (left.items().size() + right.items().size() > limits().max_list_items) {
        return MakeList(node, std::vector<Value>(limits().max_list_items + 1));
      }
      std::vector<Value> items = left.items();
      items.insert(items.end(), right.items().begin(), right.items().end());
      return MakeList(node, std::move(items));
    }
  } else if (right.is_array()) {
    if (op == "in" || op == "not in") {
      const bool member = std::any_of(right.items().begin(), right.items().end(),
                                      [&](const Value& item) { return item.StrictEquals(left); });
      return Value::Bool(member == (op == "in"));
    }
  }
  if ((left.is_string() || right.is_string()) && op == "+") {
    auto a = JsString(left, limits_.max_output_bytes),
         b = JsString(right, limits_.max_output_bytes);
    if (!a) return fail_on(a.error());
    if (!b) return fail_on(b.error());
    return MakeString(node, *a + *b);
  }
  if (left.is_string() && right.is_string() && (op == "in" || op == "not in")) {
    return Value::Bool((right.str().find(left.str()) != std::string::npos) == (op == "in"));
  }
  if (left.is_string() && right.is_object() && (op == "in" || op == "not in")) {
    return Value::Bool((right.Find(left.str()) != nullptr) == (op == "in"));
  }
  return Fail(node, "Unknown operator \"" + op + "\" between " + left.TypeName() + " and " +
                        right.TypeName());
}

Result<Value> Interpreter::EvalUnary(const Node& node, Environment& env) {
  const Value argument = KITE_TRY(Eval(*node.a, env));
  if (node.str == "not") return Value::Bool(!argument.Truthy());
  if (!NumericLike(argument)) {
    return Fail(node, "Unknown operator \"" + node.str + "\" for " + argument.TypeName());
  }
  const double value = node.str == "-" ? -argument.number() : argument.number();
  return argument.kind() == ValueKind::kFloat ? Value::Float(value) : Value::Int(value);
}

}  // namespace kite::jinja
