// The KV cache as the attention op sees it (KvCacheView), and a small owning cache (KvCache) that
// allocates its pages once from a pool with a free list. The runtime owns the cache; a graph
// run only reads and writes page contents, never the bookkeeping.
//
// Each layer maps logical page p (positions p·page_size .. (p+1)·page_size - 1) to a page of
// memory holding k [page_size, n_kv_heads, head_dim] followed by v [page_size, n_kv_heads,
// head_dim], in f16, f32 or q8_0. A q8_0 row holds, per head, head_dim / 32 ggml blocks (32 int8
// codes and an f16 scale, tensor/quant_blocks.h): blocks run along head_dim and never straddle
// two heads, so one head of one position is whole blocks that attention dequantizes on its own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "tensor/aligned_buffer.h"
#include "tensor/dtype.h"

namespace kite {

// The types a KV cache stores: f16, f32, q8_0 (the one list; settings and messages read it).
std::span<const DType> KvCacheTypes();
bool IsKvCacheType(DType dtype);
// "f16, f32, q8_0", for messages.
std::string KvCacheTypeNames();
// A KV cache type by ggml's name (case-insensitive), or nullopt for any other name.
std::optional<DType> ParseKvCacheType(std::string_view name);
// Bytes of one head of one position's k (or v): head_dim elements of `dtype` (a KV cache type;
// head_dim a multiple of its block size).
uint64_t KvHeadBytes(DType dtype, int64_t head_dim);
// Unsupported unless a head of head_dim elements is whole blocks of `dtype` (q8_0: 32).
Status CheckKvHeadDim(DType dtype, int64_t head_dim);

struct KvLayerView {
  DType dtype = DType::kF16;  // a KV cache type
  int32_t page_size = 0;
  int32_t n_kv_heads = 0;
  int32_t head_dim = 0;
  // Positions [0, length) are valid: written by an earlier run, or to be written by the
  // attention op of the run in progress. Attention refuses positions at or past it.
  int64_t length = 0;
  std::span<std::byte* const> pages;  // logical page -> page memory

  // Bytes of one head's slice of a row [head_dim]: KvHeadBytes(dtype, head_dim), kept here
  // because the kernels' page lookups (key, value) need it for every position they read.
  uint64_t head_bytes = 0;

  // Bytes of one position's k (or v) row: [n_kv_heads, head_dim].
  uint64_t row_bytes() const { return static_cast<uint64_t>(n_kv_heads) * head_bytes; }
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
  // Allocates the whole pool now (zero-filled); an error names the bad field (a head_dim that is
  // not a whole number of the type's blocks included).
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
