#include "tensor/aligned_buffer.h"

#include <sys/mman.h>

#include <cstring>
#include <new>
#include <string>

namespace kite {

// GCC marks an AddressSanitizer build with a macro, clang with a feature test.
#if defined(__SANITIZE_ADDRESS__)
#define KITE_ADDRESS_SANITIZER
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KITE_ADDRESS_SANITIZER
#endif
#endif
#ifdef KITE_ADDRESS_SANITIZER
const bool AlignedBuffer::kMapsLarge = false;
#else
const bool AlignedBuffer::kMapsLarge = true;
#endif

Result<AlignedBuffer> AlignedBuffer::Allocate(uint64_t bytes) {
  AlignedBuffer buffer;
  if (bytes == 0) return buffer;
  auto refuse = [&] { return OutOfResources("cannot allocate " + std::to_string(bytes) + " bytes"); };
  if (kMapsLarge && bytes >= kMappedBytes) {
    void* map = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (map == MAP_FAILED) return refuse();
#ifdef MADV_HUGEPAGE
    ::madvise(map, bytes, MADV_HUGEPAGE);  // advice: where THP is off, 4 KiB pages as before
#endif
    buffer.data_ = std::unique_ptr<std::byte[], Delete>(static_cast<std::byte*>(map), Delete{bytes});
    buffer.bytes_ = bytes;
    return buffer;
  }
  void* memory = ::operator new[](bytes, std::align_val_t{kAlignment}, std::nothrow);
  if (memory == nullptr) return refuse();
  std::memset(memory, 0, bytes);
  buffer.data_.reset(static_cast<std::byte*>(memory));
  buffer.bytes_ = bytes;
  return buffer;
}

void AlignedBuffer::Delete::operator()(std::byte* p) const {
  if (bytes != 0) {
    ::munmap(p, bytes);
  } else {
    ::operator delete[](p, std::align_val_t{kAlignment});
  }
}

}  // namespace kite
