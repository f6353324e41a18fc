#include <cstdint>
#include <limits>
#include <type_traits>

#include "format/gguf.h"

namespace kite {

std::string_view GgufTypeName(GgufType type) {
  switch (type) {
    case GgufType::kUint8:
      return "uint8";
    case GgufType::kInt8:
      return "int8";
    case GgufType::kUint16:
      return "uint16";
    case GgufType::kInt16:
      return "int16";
    case GgufType::kUint32:
      return "uint32";
    case GgufType::kInt32:
      return "int32";
    case GgufType::kFloat32:
      return "float32";
    case GgufType::kBool:
      return "bool";
    case GgufType::kString:
      return "string";
    case GgufType::kArray:
      return "array";
    case GgufType::kUint64:
      return "uint64";
    case GgufType::kInt64:
      return "int64";
    case GgufType::kFloat64:
      return "float64";
  }
  return "unknown";
}

namespace {

// bool is an integral type to C++ but not an integer to GGUF.
template <typename T>
constexpr bool kIsGgufInteger = std::is_integral_v<T> && !std::is_same_v<T, bool>;

}  // namespace

std::optional<int64_t> GgufValue::AsInt() const {
  return std::visit(
      [](const auto& v) -> std::optional<int64_t> {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, uint64_t>) {
          if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
          return static_cast<int64_t>(v);
        } else if constexpr (kIsGgufInteger<T>) {
          return static_cast<int64_t>(v);
        } else {
          return std::nullopt;
        }
      },
      value);
}

std::optional<double> GgufValue::AsFloat() const {
  return std::visit(
      [](const auto& v) -> std::optional<double> {
        using T = std::decay_t<decltype(v)>;
        if constexpr (kIsGgufInteger<T> || std::is_floating_point_v<T>) {
          return static_cast<double>(v);
        } else {
          return std::nullopt;
        }
      },
      value);
}

const std::string* GgufValue::AsString() const { return std::get_if<std::string>(&value); }

const GgufValue::Array* GgufValue::AsArray() const { return std::get_if<Array>(&value); }

}  // namespace kite
