// The values a template computes with, mirroring @huggingface/jinja's runtime types.
//
// Numbers are doubles, as in the reference (JavaScript): an "int" is a double tagged integral,
// so big literals and overflow behave as there instead of wrapping. Strings, lists and dicts
// are immutable and shared on copy; only a namespace is mutable (`{% set ns.x = ... %}`).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"

namespace kite::jinja {

struct Node;
class Value;

enum class ValueKind : uint8_t {
  kUndefined,  // a missing variable or attribute; prints as nothing
  kNone,
  kBool,
  kInt,
  kFloat,
  kString,
  kArray,      // list, or tuple when is_tuple()
  kObject,     // dict with insertion order, or the keyword arguments of a call
  kNamespace,  // namespace(): attributes can be assigned
  kFunction,
};

// A dict in insertion order; templates' dicts are small, so lookup is a scan.
using Object = std::vector<std::pair<std::string, Value>>;

// A callable: a global (range, namespace, raise_exception, strftime_now), a method bound to
// the string or dict it was read from, or a macro defined by the template.
struct Function {
  enum class Kind : uint8_t { kGlobal, kMethod, kMacro };
  Kind kind;
  std::string name;
  std::shared_ptr<const Value> self;  // kMethod: the receiver
  const Node* macro = nullptr;        // kMacro: owned by the template, which outlives renders
};

class Value {
 public:
  Value() = default;  // undefined

  static Value None();
  static Value Bool(bool value);
  static Value Int(double value);
  static Value Float(double value);
  static Value String(std::string value);
  static Value Array(std::vector<Value> items, bool tuple = false);
  static Value MakeObject(Object entries, bool keyword_arguments = false);
  static Value Namespace(Object entries);
  static Value MakeFunction(Function function);

  ValueKind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == ValueKind::kUndefined; }
  bool is_none() const { return kind_ == ValueKind::kNone; }
  bool is_string() const { return kind_ == ValueKind::kString; }
  bool is_array() const { return kind_ == ValueKind::kArray; }
  bool is_object() const { return kind_ == ValueKind::kObject; }
  bool is_number() const { return kind_ == ValueKind::kInt || kind_ == ValueKind::kFloat; }
  bool is_tuple() const { return kind_ == ValueKind::kArray && flag_; }
  bool is_kwargs() const { return kind_ == ValueKind::kObject && flag_; }
  // Dicts and namespaces both hold attributes (`x.name`, `x['name']`).
  bool has_entries() const { return kind_ == ValueKind::kObject || kind_ == ValueKind::kNamespace; }

  bool boolean() const { return number_ != 0; }
  double number() const { return number_; }
  const std::string& str() const { return *string_; }
  const std::vector<Value>& items() const { return *array_; }
  const Object& entries() const { return *object_; }
  const Function& function() const { return *function_; }

  // Attribute lookup in a dict or namespace; nullptr when absent.
  const Value* Find(std::string_view key) const;
  // Assigns an attribute of a namespace (the only mutation templates can do).
  void SetAttribute(const std::string& key, Value value) const;

  // Nesting depth of lists and dicts inside (a scalar is 0); bounded so that destroying or
  // printing a value cannot exhaust the stack.
  int depth() const;
  // Whether a namespace is reachable through this value.
  bool ContainsNamespace() const;

  // Python truthiness as the reference implements it (empty list/dict/string are false).
  bool Truthy() const;
  // Same container (JavaScript identity) or same scalar (JavaScript ===, ints equal floats).
  bool StrictEquals(const Value& other) const;

  // The shared storage of a container or function, for identity comparisons; null otherwise.
  const void* identity() const;

  // The reference's type names, used in error messages ("StringValue").
  const char* TypeName() const;

 private:
  ValueKind kind_ = ValueKind::kUndefined;
  bool flag_ = false;           // tuple for arrays, keyword arguments for objects
  bool has_namespace_ = false;  // arrays and dicts: a namespace is reachable inside
  uint16_t depth_ = 0;          // arrays and dicts: nesting depth when built
  double number_ = 0;           // bool, int, float
  std::shared_ptr<const std::string> string_;
  std::shared_ptr<const std::vector<Value>> array_;
  std::shared_ptr<Object> object_;  // mutable only through a namespace
  std::shared_ptr<const Function> function_;
};

// Largest nesting of lists/dicts a value may have.
inline constexpr int kMaxValueDepth = 256;

// Checks that a container built from these children stays within kMaxValueDepth.
Status CheckDepth(const std::vector<Value>& items);
Status CheckDepth(const Object& entries);

}  // namespace kite::jinja
