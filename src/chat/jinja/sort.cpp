#include "chat/jinja/sort.h"

#include <algorithm>
#include <numeric>
#include <string>

#include "chat/jinja/js_string.h"

namespace kite::jinja {
namespace {

// Values of one class compare with each other; values of different classes never do.
enum class SortClass { kNone, kUndefined, kNumber, kString, kOther };

SortClass ClassOf(const Value& v) {
  switch (v.kind()) {
    case ValueKind::kNone:
      return SortClass::kNone;
    case ValueKind::kUndefined:
      return SortClass::kUndefined;
    case ValueKind::kBool:
    case ValueKind::kInt:
    case ValueKind::kFloat:
      return SortClass::kNumber;
    case ValueKind::kString:
      return SortClass::kString;
    default:
      return SortClass::kOther;
  }
}

}  // namespace

Result<std::vector<Value>> SortValues(const std::vector<Value>& items,
                                      const std::vector<Value>& keys, bool case_sensitive,
                                      bool reverse) {
  // A sort compares every pair that ends up adjacent, so with two or more items the reference
  // raises exactly when the keys are not all of one comparable class.
  if (keys.size() >= 2) {
    const SortClass first = ClassOf(keys[0]);
    for (const Value& key : keys) {
      const SortClass cls = ClassOf(key);
      if (cls == SortClass::kOther)
        return InvalidInput(std::string("Cannot compare type: ") + key.TypeName());
      if (cls != first) {
        return InvalidInput(std::string("Cannot compare different types: ") + keys[0].TypeName() +
                            " and " + key.TypeName());
      }
    }
  }
  std::vector<std::string> folded;
  if (!keys.empty() && keys[0].is_string()) {
    for (const Value& key : keys)
      folded.push_back(case_sensitive ? key.str() : JsToLower(key.str()));
  }
  const auto compare = [&](size_t a, size_t b) {
    if (!folded.empty()) return CompareUtf16(folded[a], folded[b]);
    const double x = keys[a].number(), y = keys[b].number();
    return x < y ? -1 : x > y ? 1 : 0;  // none and undefined: all equal
  };
  std::vector<size_t> order(items.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const int c = compare(a, b);
    return reverse ? c > 0 : c < 0;
  });
  std::vector<Value> out;
  out.reserve(items.size());
  for (size_t i : order) out.push_back(items[i]);
  return out;
}

}  // namespace kite::jinja
