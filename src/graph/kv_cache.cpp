#include "graph/kv_cache.h"

#include <algorithm>
#include <array>
#include <string>

namespace kite {

namespace {

constexpr std::array kKvCacheTypes = {DType::kF16, DType::kF32, DType::kQ8_0};

}  // namespace

std::span<const DType> KvCacheTypes() { return kKvCacheTypes; }

bool IsKvCacheType(DType dtype) {
  return std::find(kKvCacheTypes.begin(), kKvCacheTypes.end(), dtype) != kKvCacheTypes.end();
}

std::string KvCacheTypeNames() {
  std::string names;
  for (DType dtype : kKvCacheTypes) names += (names.empty() ? "" : ", ") + std::string(DTypeName(dtype));
  return names;
}

std::optional<DType> ParseKvCacheType(std::string_view name) {
  const std::optional<DType> dtype = ParseDType(name);
  if (!dtype || !IsKvCacheType(*dtype)) return std::nullopt;
  return dtype;
}

uint64_t KvHeadBytes(DType dtype, int64_t head_dim) {
  const DTypeTraits& traits = Traits(dtype);
  return static_cast<uint64_t>(head_dim / traits.block_size) * traits.block_bytes;
}

Status CheckKvHeadDim(DType dtype, int64_t head_dim) {
  const int32_t block = Traits(dtype).block_size;
  if (head_dim % block == 0) return Ok();
  return Unsupported("head_dim " + std::to_string(head_dim) + " is not a multiple of " +
                     std::to_string(block) + ", the block size of KV cache type " +
                     std::string(DTypeName(dtype)) + "; use f16 or f32");
}

}  // namespace kite
