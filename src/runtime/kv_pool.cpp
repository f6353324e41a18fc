#include "runtime/kv_pool.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace kite {

Result<std::unique_ptr<KvPool>> KvPool::Create(const KvCacheConfig& config) {
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
  std::unique_ptr<KvPool> pool(new KvPool());
  pool->config_ = config;
  pool->page_bytes_ = page_bytes;
  auto memory = AlignedBuffer::Allocate(pool_bytes);
  if (!memory) return std::unexpected(std::move(memory.error()).WithContext("KV cache pool"));
  pool->memory_ = std::move(*memory);
  for (int64_t page = config.n_pages; page-- > 0;) pool->free_.push_back(page);
  return pool;
}

int64_t KvPool::free_pages() const {
  std::lock_guard lock(mutex_);
  return static_cast<int64_t>(free_.size());
}

Status KvPool::Take(std::vector<std::vector<std::byte*>>& tables, int64_t want, int64_t length) {
  int64_t count = 0;
  for (const std::vector<std::byte*>& table : tables) {
    count += want - static_cast<int64_t>(table.size());
  }
  std::lock_guard lock(mutex_);
  if (count > static_cast<int64_t>(free_.size())) {
    return OutOfResources("KV cache: " + std::to_string(length) + " positions need " +
                          std::to_string(count) + " more pages, " + std::to_string(free_.size()) +
                          " of " + std::to_string(config_.n_pages) +
                          " are free (the pool is shared by every session of the engine)");
  }
  for (std::vector<std::byte*>& table : tables) {
    while (static_cast<int64_t>(table.size()) < want) {
      table.push_back(memory_.data() + free_.back() * page_bytes_);
      free_.pop_back();
    }
  }
  return Ok();
}

void KvPool::Give(std::span<std::byte* const> pages) {
  std::lock_guard lock(mutex_);
  for (std::byte* page : pages) {
    free_.push_back((page - memory_.data()) / static_cast<int64_t>(page_bytes_));
  }
}

KvSequence::KvSequence(KvPool* pool) : pool_(pool) {
  tables_.resize(pool->config().n_layers);
  RefreshViews();
}

KvSequence::~KvSequence() { GiveAll(); }

void KvSequence::GiveAll() {
  for (std::vector<std::byte*>& table : tables_) {
    std::erase(table, nullptr);  // released pages went back already
    pool_->Give(table);
    table.clear();
  }
  released_ = 0;
}

void KvSequence::ReleaseBelow(const std::vector<bool>& sliding, int64_t position) {
  const int64_t page_size = config().page_size;
  const int64_t pages = std::min(position, length_) / page_size;
  const int64_t done = released_ / page_size;
  if (pages <= done) return;
  for (size_t layer = 0; layer < tables_.size() && layer < sliding.size(); ++layer) {
    if (!sliding[layer]) continue;
    std::vector<std::byte*>& table = tables_[layer];
    pool_->Give(std::span(table).subspan(done, pages - done));
    std::fill(table.begin() + done, table.begin() + pages, nullptr);
  }
  released_ = pages * page_size;
  RefreshViews();
}

Status KvSequence::Resize(int64_t length) {
  if (length < 0) return InvalidInput("KV cache length " + std::to_string(length) + " < 0");
  const int64_t page_size = config().page_size;
  if (length < released_) GiveAll();  // the released rows cannot come back: start afresh
  const int64_t have = tables_.empty() ? 0 : static_cast<int64_t>(tables_[0].size());
  const int64_t want = (length + page_size - 1) / page_size;
  if (want > have) {
    KITE_RETURN_IF_ERROR(pool_->Take(tables_, want, length));
  } else if (want < have) {
    for (std::vector<std::byte*>& table : tables_) {
      pool_->Give(std::span(table).subspan(want));  // past released(): no null among them
      table.resize(want);
    }
  }
  length_ = length;
  RefreshViews();
  return Ok();
}

Status KvSequence::CopyFrom(const KvSequence& source, int64_t length) {
  if (source.pool_ != pool_) return InvalidInput("copying KV rows from another pool");
  if (length < 0 || length > source.length_) {
    return InvalidInput("copying " + std::to_string(length) + " KV positions from a sequence of " +
                        std::to_string(source.length_));
  }
  KITE_RETURN_IF_ERROR(Resize(length));
  // Whole pages: a page holds its positions' k rows then their v rows, and the rows past
  // `length` in the last page are never read.
  const int64_t pages = (length + config().page_size - 1) / config().page_size;
  for (size_t layer = 0; layer < tables_.size(); ++layer) {
    for (int64_t p = 0; p < pages; ++p) {
      // A page the source's sliding window released: no later query of that layer reads it.
      if (source.tables_[layer][p] == nullptr) continue;
      std::memcpy(tables_[layer][p], source.tables_[layer][p], pool_->page_bytes_);
    }
  }
  return Ok();
}

void KvSequence::RefreshViews() {
  const KvCacheConfig& c = config();
  views_.clear();
  for (const std::vector<std::byte*>& table : tables_) {
    views_.push_back(KvLayerView{.dtype = c.dtype,
                                 .page_size = c.page_size,
                                 .n_kv_heads = c.n_kv_heads,
                                 .head_dim = c.head_dim,
                                 .length = length_,
                                 .pages = table,
                                 .head_bytes = KvHeadBytes(c.dtype, c.head_dim)});
  }
  self_ = KvSequenceView{views_};
}

}  // namespace kite
