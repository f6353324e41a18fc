// An owned, zero-filled byte buffer aligned to a cache line, for activation arenas and KV pages.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <string>

#include "base/status.h"

namespace kite {

class AlignedBuffer {
 public:
  static constexpr size_t kAlignment = 64;  // a cache line; enough for any SIMD width we target

  AlignedBuffer() = default;

  // `bytes` may be 0 (then data() is null). OutOfResources when the memory is not there, so
  // that a too-large arena or KV cache is an error the caller can report.
  static Result<AlignedBuffer> Allocate(uint64_t bytes) {
    AlignedBuffer buffer;
    if (bytes == 0) return buffer;
    void* memory = ::operator new[](bytes, std::align_val_t{kAlignment}, std::nothrow);
    if (memory == nullptr) {
      return OutOfResources("cannot allocate " + std::to_string(bytes) + " bytes");
    }
    std::memset(memory, 0, bytes);
    buffer.data_.reset(static_cast<std::byte*>(memory));
    buffer.bytes_ = bytes;
    return buffer;
  }

  std::byte* data() const { return data_.get(); }
  uint64_t size() const { return bytes_; }

 private:
  struct Delete {
    void operator()(std::byte* p) const { ::operator delete[](p, std::align_val_t{kAlignment}); }
  };
  std::unique_ptr<std::byte[], Delete> data_;
  uint64_t bytes_ = 0;
};

}  // namespace kite
