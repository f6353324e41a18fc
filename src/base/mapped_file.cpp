#include "base/mapped_file.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "base/file_check.h"

namespace kite {

namespace {

// The live maps, so that ReleaseFilePages can tell a file-backed pointer from any other.
struct LiveMaps {
  std::mutex mutex;
  std::vector<std::span<const uint8_t>> maps;
};
LiveMaps& Live() {
  static LiveMaps* live = new LiveMaps;  // never destroyed: maps may outlive static destructors
  return *live;
}
void Register(const uint8_t* data, size_t size) {
  if (data == nullptr) return;
  std::lock_guard lock(Live().mutex);
  Live().maps.emplace_back(data, size);
}
void Unregister(const uint8_t* data) {
  if (data == nullptr) return;
  std::lock_guard lock(Live().mutex);
  auto& maps = Live().maps;
  std::erase_if(maps, [&](std::span<const uint8_t> map) { return map.data() == data; });
}

}  // namespace

bool ReleaseFilePages(const void* data, uint64_t bytes) {
  const auto begin = reinterpret_cast<uintptr_t>(data);
  const uintptr_t end = begin + bytes;
  std::lock_guard lock(Live().mutex);
  const bool inside = std::any_of(Live().maps.begin(), Live().maps.end(), [&](auto map) {
    const auto map_begin = reinterpret_cast<uintptr_t>(map.data());
    return begin >= map_begin && end <= map_begin + map.size();
  });
  if (!inside) return false;
  const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t first = (begin + page - 1) / page * page;
  const uintptr_t last = end / page * page;
  if (first < last) ::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
  return true;
}

Result<MappedFile> MappedFile::Open(const std::string& path) {
  const RegularFile regular = KITE_TRY(RegularFile::Open(path));
  MappedFile file;
  file.path_ = path;
  file.size_ = static_cast<size_t>(regular.size());
  if (file.size_ > 0) {
    void* map = ::mmap(nullptr, file.size_, PROT_READ, MAP_PRIVATE, regular.fd(), 0);
    if (map == MAP_FAILED) {
      return OutOfResources(path + ": mmap failed: " + std::strerror(errno));
    }
    file.data_ = static_cast<const uint8_t*>(map);
    Register(file.data_, file.size_);
  }
  return file;
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : data_(other.data_), size_(other.size_), path_(std::move(other.path_)) {
  other.data_ = nullptr;
  other.size_ = 0;
}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    Unregister(data_);
    if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
    data_ = other.data_;
    size_ = other.size_;
    path_ = std::move(other.path_);
    other.data_ = nullptr;
    other.size_ = 0;
  }
  return *this;
}

MappedFile::~MappedFile() {
  Unregister(data_);
  if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
}

Result<std::string> ReadTextFile(const std::string& path, uint64_t max_bytes) {
  const RegularFile file = KITE_TRY(RegularFile::Open(path));
  if (file.size() > max_bytes) {
    return OutOfResources(path + ": " + std::to_string(file.size()) + " bytes, more than the " +
                          std::to_string(max_bytes) + " bytes (" + std::to_string(max_bytes >> 20) +
                          " MiB) allowed for this kind of file");
  }
  // The size is only a hint (the file may grow while it is read, a /proc file says 0): one byte
  // more sees the end, and reading stops one byte past the limit.
  std::string text(static_cast<size_t>(file.size()) + 1, '\0');
  size_t done = 0;
  while (true) {
    if (done == text.size()) {
      if (text.size() > max_bytes) break;
      text.resize(std::min<uint64_t>(max_bytes + 1, std::max<uint64_t>(2 * text.size(), 4096)));
    }
    const ssize_t n = ::read(file.fd(), text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return InvalidInput(path + ": read failed: " + std::strerror(errno));
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  if (done > max_bytes) {
    return OutOfResources(path + ": more than the " + std::to_string(max_bytes) +
                          " bytes allowed for this kind of file");
  }
  text.resize(done);
  return text;
}

}  // namespace kite
