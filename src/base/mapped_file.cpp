#include "base/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>
#include <vector>

namespace kite {

namespace {

std::unexpected<Error> OpenError(const std::string& path) {
  int err = errno;
  std::string message = path + ": cannot open: " + std::strerror(err);
  return err == ENOENT ? NotFound(message) : InvalidInput(message);
}

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
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return OpenError(path);
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    return OpenError(path);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return InvalidInput(path + ": not a regular file");
  }
  MappedFile file;
  file.path_ = path;
  file.size_ = static_cast<size_t>(st.st_size);
  if (file.size_ > 0) {
    void* map = ::mmap(nullptr, file.size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED) {
      int err = errno;
      ::close(fd);
      return OutOfResources(path + ": mmap failed: " + std::strerror(err));
    }
    file.data_ = static_cast<const uint8_t*>(map);
    Register(file.data_, file.size_);
  }
  ::close(fd);
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

Result<std::string> ReadTextFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    errno = ENOENT;
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0) errno = EACCES;
    return OpenError(path);
  }
  std::ostringstream contents;
  contents << in.rdbuf();
  return contents.str();
}

}  // namespace kite
