// The KV cache as the attention op sees it (KvCacheView), and a small owning cache (KvCache) that
// allocates its pages once from a pool with a free list. The runtime owns the cache; a graph
// run only reads and writes page contents, never the bookkeeping.
//
// Each layer maps logical page p (positions p·page_size .. (p+1)·page_size - 1) to a page of
// memory holding k [page_size, n_kv_heads, head_dim] followed by v [page_size, n_kv_heads,
// head_dim], in f16 or f32.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "base/status.h"
#include "graph/aligned_buffer.h"
#include "tensor/dtype.h"

namespace kite {

struct KvLayerView {
  DType dtype = DType::kF16;  // kF16 or kF32
  int32_t page_size = 0;
  int32_t n_kv_heads = 0;
  int32_t head_dim = 0;
  // Positions [0, length) are valid: written by an earlier run, or to be written by the
  // attention op of the run in progress. Attention refuses positions at or past it.
  int64_t length = 0;
  std::span<std::byte* const> pages;  // logical page -> page memory

  // Bytes of one position's k (or v) row: [n_kv_heads, head_dim].
  uint64_t row_bytes() const {
    return static_cast<uint64_t>(n_kv_heads) * head_dim * (dtype == DType::kF16 ? 2 : 4);
  }
  std::byte* key(int64_t pos) const {
    return pages[pos / page_size] + (pos % page_size) * row_bytes();
  }
  std::byte* value(int64_t pos) const { return key(pos) + page_size * row_bytes(); }
};

struct KvCacheView {
  std::span<const KvLayerView> layers;
};

struct KvCacheConfig {
  int32_t n_layers = 0;
  int32_t n_kv_heads = 0;
  int32_t head_dim = 0;
  int32_t page_size = 16;
  int64_t n_pages = 0;  // the pool, shared by all layers
  DType dtype = DType::kF16;
};

class KvCache {
 public:
  // Allocates the whole pool now (zero-filled); an error names the bad field.
  static Result<KvCache> Create(const KvCacheConfig& config);

  KvCache(KvCache&&) = default;
  KvCache& operator=(KvCache&&) = default;
  KvCache(const KvCache&) = delete;
  KvCache& operator=(const KvCache&) = delete;

  const KvCacheConfig& config() const { return config_; }
  int64_t length() const { return length_; }
  int64_t free_pages() const { return static_cast<int64_t>(free_.size()); }

  // Makes positions [0, length) valid in every layer: maps pages from the pool as needed, or
  // returns the pages past the new length to it (to rewind or clear). OutOfResources, with
  // nothing changed, when the pool is short.
  Status Resize(int64_t length);

  // Valid until the next Resize or move.
  KvCacheView view() const { return KvCacheView{views_}; }

 private:
  KvCache() = default;
  int64_t PagesFor(int64_t length) const;
  void RefreshViews();

  KvCacheConfig config_;
  uint64_t page_bytes_ = 0;
  AlignedBuffer pool_;
  std::vector<int64_t> free_;                    // free page indices; the back is taken first
  std::vector<std::vector<std::byte*>> tables_;  // per layer: logical page -> page memory
  std::vector<KvLayerView> views_;
  int64_t length_ = 0;
};

}  // namespace kite
