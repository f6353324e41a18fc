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

Result<KvCache> KvCache::Create(const KvCacheConfig& config) {
  auto positive = [](const char* field, int64_t v) -> Status {
    if (v <= 0) {
      return InvalidInput(std::string("KV cache config: ") + field + " is " + std::to_string(v) +
                          ", expected > 0");
    }
    return Ok();
  };
  KITE_RETURN_IF_ERROR(positive("n_layers", config.n_layers));
  KITE_RETURN_IF_ERROR(positive("n_kv_heads", config.n_kv_heads));
  KITE_RETURN_IF_ERROR(positive("head_dim", config.head_dim));
  KITE_RETURN_IF_ERROR(positive("page_size", config.page_size));
  KITE_RETURN_IF_ERROR(positive("n_pages", config.n_pages));
  if (!IsKvCacheType(config.dtype)) {
    return InvalidInput("KV cache config: dtype " + std::string(DTypeName(config.dtype)) +
                        ", expected one of " + KvCacheTypeNames());
  }
  if (Status whole = CheckKvHeadDim(config.dtype, config.head_dim); !whole) {
    return std::unexpected(std::move(whole.error()).WithContext("KV cache config"));
  }
  uint64_t page_bytes = 0;
  uint64_t pool_bytes = 0;
  if (__builtin_mul_overflow(2 * KvHeadBytes(config.dtype, config.head_dim) * config.n_kv_heads,
                             static_cast<uint64_t>(config.page_size), &page_bytes) ||
      __builtin_mul_overflow(page_bytes, static_cast<uint64_t>(config.n_pages), &pool_bytes) ||
      pool_bytes > (uint64_t{1} << 48)) {
    return OutOfResources("KV cache config: " + std::to_string(config.n_pages) +
                          " pages are too large to allocate");
  }
  KvCache cache;
  cache.config_ = config;
  cache.page_bytes_ = page_bytes;
  auto pool = AlignedBuffer::Allocate(pool_bytes);
  if (!pool) return std::unexpected(std::move(pool.error()).WithContext("KV cache pool"));
  cache.pool_ = std::move(*pool);
  for (int64_t page = config.n_pages; page-- > 0;) cache.free_.push_back(page);
  cache.tables_.resize(config.n_layers);
  cache.RefreshViews();
  return cache;
}

int64_t KvCache::PagesFor(int64_t length) const {
  return (length + config_.page_size - 1) / config_.page_size;
}

Status KvCache::Resize(int64_t length) {
  if (length < 0) return InvalidInput("KV cache length " + std::to_string(length) + " < 0");
  const int64_t have = PagesFor(length_);
  const int64_t want = PagesFor(length);
  if (want > have) {
    const int64_t needed = (want - have) * config_.n_layers;
    if (needed > free_pages()) {
      return OutOfResources("KV cache: " + std::to_string(length) + " positions need " +
                            std::to_string(needed) + " more pages, " +
                            std::to_string(free_pages()) + " of " +
                            std::to_string(config_.n_pages) + " are free");
    }
    for (std::vector<std::byte*>& table : tables_) {
      while (static_cast<int64_t>(table.size()) < want) {
        table.push_back(pool_.data() + free_.back() * page_bytes_);
        free_.pop_back();
      }
    }
  } else {
    for (std::vector<std::byte*>& table : tables_) {
      while (static_cast<int64_t>(table.size()) > want) {
        free_.push_back((table.back() - pool_.data()) / static_cast<int64_t>(page_bytes_));
        table.pop_back();
      }
    }
  }
  length_ = length;
  RefreshViews();
  return Ok();
}

void KvCache::RefreshViews() {
  views_.clear();
  for (const std::vector<std::byte*>& table : tables_) {
    views_.push_back(KvLayerView{.dtype = config_.dtype,
                                 .page_size = config_.page_size,
                                 .n_kv_heads = config_.n_kv_heads,
                                 .head_dim = config_.head_dim,
                                 .length = length_,
                                 .pages = table,
                                 .head_bytes = KvHeadBytes(config_.dtype, config_.head_dim)});
  }
}

}  // namespace kite
