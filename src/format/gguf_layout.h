// Facts of the GGUF layout shared by the reader and the writer (ggml's docs/gguf.md).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "format/gguf.h"

namespace kite::gguf {

inline constexpr uint8_t kMagic[4] = {'G', 'G', 'U', 'F'};
inline constexpr uint32_t kWrittenVersion = 3;
inline constexpr uint64_t kDefaultAlignment = 32;  // when general.alignment is absent
inline constexpr std::string_view kAlignmentKey = "general.alignment";
inline constexpr uint32_t kMaxDims = 4;  // GGML_MAX_DIMS
// Arrays of arrays are legal; deeper nesting than this is refused so that a hostile file cannot
// exhaust the stack of the recursive reader.
inline constexpr int kMaxArrayDepth = 8;

inline bool IsKnownType(uint32_t type) { return type <= static_cast<uint32_t>(GgufType::kFloat64); }

// Bytes of a scalar value in the file, or 0 for strings and arrays (variable length).
inline uint64_t ScalarBytes(GgufType type) {
  switch (type) {
    case GgufType::kUint8:
    case GgufType::kInt8:
    case GgufType::kBool:
      return 1;
    case GgufType::kUint16:
    case GgufType::kInt16:
      return 2;
    case GgufType::kUint32:
    case GgufType::kInt32:
    case GgufType::kFloat32:
      return 4;
    case GgufType::kUint64:
    case GgufType::kInt64:
    case GgufType::kFloat64:
      return 8;
    case GgufType::kString:
    case GgufType::kArray:
      return 0;
  }
  return 0;
}

// The fewest bytes one value of `type` can take: lets the reader refuse a count that the rest of
// the file cannot hold before it allocates anything for it.
inline uint64_t MinEncodedBytes(GgufType type) {
  if (type == GgufType::kString) return 8;     // length
  if (type == GgufType::kArray) return 4 + 8;  // element type + count
  return ScalarBytes(type);
}

// 'text', for names in messages.
inline std::string Quote(std::string_view text) {
  std::string quoted;
  quoted.reserve(text.size() + 2);
  quoted += '\'';
  quoted += text;
  quoted += '\'';
  return quoted;
}

inline bool IsPowerOfTwo(uint64_t x) { return x != 0 && (x & (x - 1)) == 0; }

}  // namespace kite::gguf
