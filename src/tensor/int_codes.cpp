#include "tensor/int_codes.h"

#include <cstring>

namespace kite {

bool IsCodeType(DType dtype) {
  switch (dtype) {
    case DType::kI8:
    case DType::kU8:
    case DType::kI16:
    case DType::kU16:
    case DType::kI4:
    case DType::kU4:
      return true;
    default:
      return false;
  }
}

void ReadCodes(DType dtype, const void* data, int64_t first, int64_t n, int32_t* out) {
  // One loop per dtype: packing a model's weights reads every code through here.
  const auto* bytes = static_cast<const uint8_t*>(data);
  switch (dtype) {
    case DType::kI8:
      for (int64_t i = 0; i < n; ++i) out[i] = static_cast<int8_t>(bytes[first + i]);
      return;
    case DType::kU8:
      for (int64_t i = 0; i < n; ++i) out[i] = bytes[first + i];
      return;
    case DType::kI16:
      for (int64_t i = 0; i < n; ++i) {
        int16_t v;
        std::memcpy(&v, bytes + 2 * (first + i), 2);
        out[i] = v;
      }
      return;
    case DType::kU16:
      for (int64_t i = 0; i < n; ++i) {
        uint16_t v;
        std::memcpy(&v, bytes + 2 * (first + i), 2);
        out[i] = v;
      }
      return;
    case DType::kI4:
    case DType::kU4: {
      // Sign-extend the nibbles for i4: 8..15 stand for -8..-1.
      const int32_t wrap = dtype == DType::kI4 ? 8 : 16;
      for (int64_t i = 0; i < n; ++i) {
        const int64_t e = first + i;
        const int32_t nibble = (bytes[e / 2] >> (4 * (e % 2))) & 0xf;
        out[i] = nibble >= wrap ? nibble - 16 : nibble;
      }
      return;
    }
    default:
      for (int64_t i = 0; i < n; ++i) out[i] = 0;  // not a code type (IsCodeType); callers check
      return;
  }
}

void WriteCodes(DType dtype, const int32_t* codes, int64_t n, void* data) {
  auto* bytes = static_cast<uint8_t*>(data);
  for (int64_t i = 0; i < n; ++i) {
    switch (dtype) {
      case DType::kI8:
      case DType::kU8:
        bytes[i] = static_cast<uint8_t>(codes[i]);
        break;
      case DType::kI16:
      case DType::kU16: {
        const auto v = static_cast<uint16_t>(codes[i]);
        std::memcpy(bytes + 2 * i, &v, 2);
        break;
      }
      case DType::kI4:
      case DType::kU4: {
        const auto nibble = static_cast<uint8_t>(codes[i] & 0xf);
        if (i % 2 == 0) {
          bytes[i / 2] = nibble;
        } else {
          bytes[i / 2] = static_cast<uint8_t>(bytes[i / 2] | nibble << 4);
        }
        break;
      }
      default:
        break;
    }
  }
}

}  // namespace kite
