// FNV-1a, 64 bits: a fast hash for fingerprints and checksums. It detects accidental changes
// (a damaged file, another model), not deliberate ones.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace kite {

inline constexpr uint64_t kFnv1aStart = 0xcbf29ce484222325ULL;

// Continues `hash` (kFnv1aStart for a new one) over `bytes` bytes at `data`.
inline uint64_t Fnv1a(const void* data, size_t bytes, uint64_t hash = kFnv1aStart) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < bytes; ++i) hash = (hash ^ p[i]) * 0x100000001b3ULL;
  return hash;
}
// (A name of its own: an overload would let Fnv1a("text", hash) take `hash` as a byte count.)
inline uint64_t Fnv1aString(std::string_view text, uint64_t hash = kFnv1aStart) {
  return Fnv1a(text.data(), text.size(), hash);
}

}  // namespace kite
