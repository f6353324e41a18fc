#include "chat/jinja/value.h"

#include <algorithm>

namespace kite::jinja {
namespace {

template <typename Children, typename Get>
void Summarize(const Children& children, Get get, uint16_t* depth, bool* has_namespace) {
  int deepest = 0;
  for (const auto& child : children) {
    const Value& value = get(child);
    deepest = std::max(deepest, value.depth());
    if (value.ContainsNamespace()) *has_namespace = true;
  }
  *depth = static_cast<uint16_t>(std::min(deepest + 1, 0xffff));
}

const Value& ItemOf(const Value& value) { return value; }
const Value& EntryOf(const std::pair<std::string, Value>& entry) { return entry.second; }

}  // namespace

Value Value::None() {
  Value v;
  v.kind_ = ValueKind::kNone;
  return v;
}

Value Value::Bool(bool value) {
  Value v;
  v.kind_ = ValueKind::kBool;
  v.number_ = value ? 1 : 0;
  return v;
}

Value Value::Int(double value) {
  Value v;
  v.kind_ = ValueKind::kInt;
  v.number_ = value;
  return v;
}

Value Value::Float(double value) {
  Value v;
  v.kind_ = ValueKind::kFloat;
  v.number_ = value;
  return v;
}

Value Value::String(std::string value) {
  Value v;
  v.kind_ = ValueKind::kString;
  v.string_ = std::make_shared<const std::string>(std::move(value));
  return v;
}

Value Value::Array(std::vector<Value> items, bool tuple) {
  Value v;
  v.kind_ = ValueKind::kArray;
  v.flag_ = tuple;
  Summarize(items, ItemOf, &v.depth_, &v.has_namespace_);
  v.array_ = std::make_shared<const std::vector<Value>>(std::move(items));
  return v;
}

Value Value::MakeObject(Object entries, bool keyword_arguments) {
  Value v;
  v.kind_ = ValueKind::kObject;
  v.flag_ = keyword_arguments;
  Summarize(entries, EntryOf, &v.depth_, &v.has_namespace_);
  v.object_ = std::make_shared<Object>(std::move(entries));
  return v;
}

Value Value::Namespace(Object entries) {
  Value v;
  v.kind_ = ValueKind::kNamespace;
  v.object_ = std::make_shared<Object>(std::move(entries));
  return v;
}

Value Value::MakeFunction(Function function) {
  Value v;
  v.kind_ = ValueKind::kFunction;
  v.function_ = std::make_shared<const Function>(std::move(function));
  return v;
}

const Value* Value::Find(std::string_view key) const {
  if (!has_entries()) return nullptr;
  for (const auto& [name, value] : *object_) {
    if (name == key) return &value;
  }
  return nullptr;
}

void Value::SetAttribute(const std::string& key, Value value) const {
  for (auto& [name, existing] : *object_) {
    if (name == key) {
      existing = std::move(value);
      return;
    }
  }
  object_->emplace_back(key, std::move(value));
}

int Value::depth() const {
  switch (kind_) {
    case ValueKind::kArray:
    case ValueKind::kObject:
      return depth_;
    case ValueKind::kNamespace: {
      // Namespaces never hold namespaces (see SetAttribute's callers), so this stays shallow.
      int deepest = 0;
      for (const auto& entry : *object_) deepest = std::max(deepest, entry.second.depth());
      return deepest + 1;
    }
    default:
      return 0;
  }
}

bool Value::ContainsNamespace() const {
  return kind_ == ValueKind::kNamespace ||
         ((kind_ == ValueKind::kArray || kind_ == ValueKind::kObject) && has_namespace_);
}

bool Value::Truthy() const {
  switch (kind_) {
    case ValueKind::kUndefined:
    case ValueKind::kNone:
      return false;
    case ValueKind::kBool:
    case ValueKind::kInt:
    case ValueKind::kFloat:
      return number_ != 0 && number_ == number_;  // NaN is falsy in JavaScript
    case ValueKind::kString:
      return !string_->empty();
    case ValueKind::kArray:
      return !array_->empty();
    case ValueKind::kObject:
      return !object_->empty();
    case ValueKind::kNamespace:
    case ValueKind::kFunction:
      return true;
  }
  return false;
}

bool Value::StrictEquals(const Value& other) const {
  const bool numeric = is_number() && other.is_number();
  if (kind_ != other.kind_ && !numeric) return false;
  switch (kind_) {
    case ValueKind::kUndefined:
    case ValueKind::kNone:
      return true;
    case ValueKind::kBool:
    case ValueKind::kInt:
    case ValueKind::kFloat:
      return number_ == other.number_;
    case ValueKind::kString:
      return *string_ == *other.string_;
    case ValueKind::kArray:
      return array_ == other.array_;
    case ValueKind::kObject:
    case ValueKind::kNamespace:
      return object_ == other.object_;
    case ValueKind::kFunction:
      return function_ == other.function_;
  }
  return false;
}

const void* Value::identity() const {
  switch (kind_) {
    case ValueKind::kArray:
      return array_.get();
    case ValueKind::kObject:
    case ValueKind::kNamespace:
      return object_.get();
    case ValueKind::kFunction:
      return function_.get();
    default:
      return nullptr;
  }
}

const char* Value::TypeName() const {
  switch (kind_) {
    case ValueKind::kUndefined:
      return "UndefinedValue";
    case ValueKind::kNone:
      return "NullValue";
    case ValueKind::kBool:
      return "BooleanValue";
    case ValueKind::kInt:
      return "IntegerValue";
    case ValueKind::kFloat:
      return "FloatValue";
    case ValueKind::kString:
      return "StringValue";
    case ValueKind::kArray:
      return flag_ ? "TupleValue" : "ArrayValue";
    case ValueKind::kObject:
      return flag_ ? "KeywordArgumentsValue" : "ObjectValue";
    case ValueKind::kNamespace:
      return "NamespaceValue";
    case ValueKind::kFunction:
      return "FunctionValue";
  }
  return "Value";
}

Status CheckDepth(const std::vector<Value>& items) {
  for (const Value& item : items) {
    if (item.depth() >= kMaxValueDepth) {
      return OutOfResources("lists and dicts nest deeper than " + std::to_string(kMaxValueDepth));
    }
  }
  return Ok();
}

Status CheckDepth(const Object& entries) {
  for (const auto& entry : entries) {
    if (entry.second.depth() >= kMaxValueDepth) {
      return OutOfResources("lists and dicts nest deeper than " + std::to_string(kMaxValueDepth));
    }
  }
  return Ok();
}

}  // namespace kite::jinja
