// An owned, zero-filled byte buffer aligned to a cache line, for activation arenas, KV pages and
// packed weights.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "base/status.h"

namespace kite {

class AlignedBuffer {
 public:
  static constexpr size_t kAlignment = 64;  // a cache line; enough for any SIMD width we target

  AlignedBuffer() = default;

  // `bytes` may be 0 (then data() is null). OutOfResources when the memory is not there, so
  // that a too-large arena or KV cache is an error the caller can report. Buffers of
  // kMappedBytes or more are fresh anonymous mappings, which the kernel hands over zeroed page
  // by page as they are first written: nothing is written here, so whoever fills the buffer
  // (the packer's threads, a KV page's first token) also takes its page faults, where a memset
  // would fault every page in on this one thread first. They ask for transparent huge pages, a
  // fault per 2 MiB instead of per 4 KiB.
  static Result<AlignedBuffer> Allocate(uint64_t bytes);

  std::byte* data() const { return data_.get(); }
  uint64_t size() const { return bytes_; }

  static constexpr uint64_t kMappedBytes = uint64_t{2} << 20;
  // False under AddressSanitizer: it guards heap blocks with redzones, not mappings, so there
  // every buffer comes from the heap and a kernel reading past a packed matrix's end is caught.
  static const bool kMapsLarge;

 private:
  struct Delete {
    Delete() : bytes(0) {}
    explicit Delete(uint64_t mapped) : bytes(mapped) {}
    uint64_t bytes;  // the mapping's length; 0 for a heap block
    void operator()(std::byte* p) const;
  };
  std::unique_ptr<std::byte[], Delete> data_;
  uint64_t bytes_ = 0;
};

}  // namespace kite
