// The KV cache's memory: one pool of fixed-size pages, allocated once and shared by every
// sequence of an engine (KvPool), and a sequence's pages (KvSequence: per layer, a table from
// logical page to page memory). Sessions own a sequence each, so two conversations on one engine
// keep their caches side by side instead of recomputing each other's history. Taking and
// returning pages is thread-safe; a sequence itself belongs to one thread at a time.
//
//   auto pool = KITE_TRY(KvPool::Create(config));
//   KvSequence sequence(pool.get());
//   KITE_RETURN_IF_ERROR(sequence.Resize(n_past + T));  // pages for positions [0, n_past + T)
//   graph.Run(..., sequence.batch_view());
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "base/status.h"
#include "graph/kv_cache.h"
#include "tensor/aligned_buffer.h"
#include "tensor/dtype.h"

namespace kite {

struct KvCacheConfig {
  int32_t n_layers = 0;
  int32_t n_kv_heads = 0;
  int32_t head_dim = 0;
  int32_t page_size = 16;
  int64_t n_pages = 0;  // the pool, shared by all layers and sequences
  DType dtype = DType::kF16;
};

class KvPool {
 public:
  // Allocates the whole pool now (zero-filled); an error names the bad field (a head_dim that is
  // not a whole number of the type's blocks included).
  static Result<std::unique_ptr<KvPool>> Create(const KvCacheConfig& config);

  KvPool(const KvPool&) = delete;
  KvPool& operator=(const KvPool&) = delete;

  const KvCacheConfig& config() const { return config_; }
  int64_t free_pages() const;

 private:
  friend class KvSequence;
  KvPool() = default;
  // Grows every table to `want` pages, all or none: OutOfResources naming the `length`
  // (positions) that needed them.
  Status Take(std::vector<std::vector<std::byte*>>& tables, int64_t want, int64_t length);
  void Give(std::span<std::byte* const> pages);

  KvCacheConfig config_;
  uint64_t page_bytes_ = 0;
  AlignedBuffer memory_;
  mutable std::mutex mutex_;
  std::vector<int64_t> free_;  // free page indices; the back is taken first
};

class KvSequence {
 public:
  // `pool` must outlive the sequence.
  explicit KvSequence(KvPool* pool);
  ~KvSequence();  // its pages go back to the pool
  KvSequence(const KvSequence&) = delete;  // views point into it
  KvSequence& operator=(const KvSequence&) = delete;

  const KvCacheConfig& config() const { return pool_->config(); }
  int64_t length() const { return length_; }

  // Makes positions [0, length) valid in every layer: takes pages from the pool as needed, or
  // returns the pages past the new length to it (to rewind or clear). OutOfResources, with
  // nothing changed, when the pool is short. Shrinking below released() keeps the length, not
  // the rows: every page is given back and taken anew.
  Status Resize(int64_t length);
  // Makes this sequence `length` positions long holding the rows of `source`'s first `length`
  // positions (a sequence of the same pool, not written during the call). OutOfResources, with
  // nothing changed, when the pool is short.
  Status CopyFrom(const KvSequence& source, int64_t length);

  // Sliding-window layers: gives back to the pool each page of the layers `sliding` marks
  // (per layer) that lies wholly below `position`, which no later query of those layers sees.
  // Their page tables then hold null there; the caller must not rewind into what was released.
  void ReleaseBelow(const std::vector<bool>& sliding, int64_t position);
  // The positions below which the sliding layers hold no pages (whole pages; 0: none released).
  int64_t released() const { return released_; }

  // Valid until the next Resize.
  KvSequenceView view() const { return self_; }
  // This sequence alone, as one graph run's attention sees it.
  KvCacheView batch_view() const {
    return KvCacheView{.sequences = {&self_, 1}, .token_sequence = {}};
  }

 private:
  void RefreshViews();
  // Every page back to the pool (released ones are null), the tables empty.
  void GiveAll();

  KvPool* pool_;
  std::vector<std::vector<std::byte*>> tables_;  // per layer: logical page -> page memory
  std::vector<KvLayerView> views_;
  KvSequenceView self_;
  int64_t length_ = 0;
  int64_t released_ = 0;
};

}  // namespace kite
