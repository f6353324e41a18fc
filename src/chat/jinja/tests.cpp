// The tests of `x is name` (and of selectattr / rejectattr).
#include <cmath>
#include <string_view>

#include "chat/jinja/interpreter.h"
#include "chat/jinja/js_string.h"

namespace kite::jinja {
namespace {

constexpr std::string_view kTests[] = {
    "boolean", "callable", "odd",       "even",     "false",   "true",     "none",
    "string",  "number",   "integer",   "iterable", "mapping", "sequence", "lower",
    "upper",   "defined",  "undefined", "equalto",  "eq",
};

}  // namespace

bool IsKnownTest(const std::string& name) {
  for (std::string_view test : kTests) {
    if (test == name) return true;
  }
  return false;
}

Result<bool> ApplyTest(const std::string& name, const Value& operand, const Value* argument) {
  const ValueKind kind = operand.kind();
  if (name == "boolean") return kind == ValueKind::kBool;
  if (name == "callable") return kind == ValueKind::kFunction;
  if (name == "odd" || name == "even") {
    if (kind != ValueKind::kInt)
      return InvalidInput("cannot " + name + " on " + operand.TypeName());
    const bool odd = std::fmod(operand.number(), 2) != 0;
    return name == "odd" ? odd : !odd;
  }
  if (name == "false") return kind == ValueKind::kBool && !operand.boolean();
  if (name == "true") return kind == ValueKind::kBool && operand.boolean();
  if (name == "none") return kind == ValueKind::kNone;
  if (name == "string") return kind == ValueKind::kString;
  if (name == "number") return operand.is_number();
  if (name == "integer") return kind == ValueKind::kInt;
  if (name == "iterable") return (operand.is_array() && !operand.is_tuple()) || operand.is_string();
  if (name == "mapping") return operand.is_object();
  if (name == "sequence") return operand.is_array() || operand.is_object() || operand.is_string();
  if (name == "lower" || name == "upper") {
    if (!operand.is_string())
      return InvalidInput(std::string("cannot test case of ") + operand.TypeName());
    return operand.str() == (name == "lower" ? JsToLower(operand.str()) : JsToUpper(operand.str()));
  }
  if (name == "defined") return kind != ValueKind::kUndefined;
  if (name == "undefined") return kind == ValueKind::kUndefined;
  if (name == "equalto" || name == "eq") {
    if (!argument) return InvalidInput("test '" + name + "' needs a value to compare with");
    return operand.StrictEquals(*argument);
  }
  return InvalidInput("Unknown test: " + name);
}

}  // namespace kite::jinja
