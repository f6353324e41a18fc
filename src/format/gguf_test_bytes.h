// Test helper: lays out GGUF bytes by hand, following ggml's docs/gguf.md directly, so reader
// tests do not depend on GgufWriter (and writer tests can compare against it).
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <string_view>
#include <vector>

namespace kite::testing {

// GGUF value type ids and ggml tensor type ids, spelled out from the spec.
enum : uint32_t {
  kTU8 = 0,
  kTI8 = 1,
  kTU16 = 2,
  kTI16 = 3,
  kTU32 = 4,
  kTI32 = 5,
  kTF32 = 6,
  kTBool = 7,
  kTString = 8,
  kTArray = 9,
  kTU64 = 10,
  kTI64 = 11,
  kTF64 = 12,
};
enum : uint32_t { kGgmlF32 = 0, kGgmlF16 = 1, kGgmlQ4_0 = 2, kGgmlQ8_0 = 8 };

class GgufBytes {
 public:
  // The little-endian bytes of any trivially copyable scalar (tests run on little-endian hosts).
  template <typename T>
  GgufBytes& Put(T value) {
    static_assert(std::endian::native == std::endian::little);
    uint8_t raw[sizeof(T)];
    std::memcpy(raw, &value, sizeof(T));
    bytes.insert(bytes.end(), raw, raw + sizeof(T));
    return *this;
  }
  GgufBytes& U8(uint8_t v) { return Put(v); }
  GgufBytes& U32(uint32_t v) { return Put(v); }
  GgufBytes& U64(uint64_t v) { return Put(v); }
  GgufBytes& Raw(std::initializer_list<uint8_t> raw) {
    bytes.insert(bytes.end(), raw);
    return *this;
  }
  GgufBytes& Str(std::string_view text) {
    U64(text.size());
    bytes.insert(bytes.end(), text.begin(), text.end());
    return *this;
  }
  GgufBytes& Header(uint32_t version, uint64_t tensors, uint64_t keys) {
    return Raw({'G', 'G', 'U', 'F'}).U32(version).U64(tensors).U64(keys);
  }
  // A key and its value type; the caller appends the value.
  GgufBytes& Key(std::string_view key, uint32_t type) { return Str(key).U32(type); }
  // Array header: element type and count; the caller appends the elements.
  GgufBytes& ArrayOf(uint32_t element_type, uint64_t count) { return U32(element_type).U64(count); }
  // A tensor info; dims are innermost first, as in the file.
  GgufBytes& TensorInfo(std::string_view name, std::initializer_list<uint64_t> ne, uint32_t type,
                        uint64_t offset) {
    Str(name).U32(static_cast<uint32_t>(ne.size()));
    for (uint64_t dim : ne) U64(dim);
    return U32(type).U64(offset);
  }
  GgufBytes& PadTo(size_t alignment) {
    bytes.resize((bytes.size() + alignment - 1) / alignment * alignment, 0);
    return *this;
  }
  size_t size() const { return bytes.size(); }

  std::vector<uint8_t> bytes;
};

}  // namespace kite::testing
