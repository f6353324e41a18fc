// What a path is, checked before Kite reads or writes it: a FIFO, a device or a directory given
// where a file is expected must be an error naming the path, never a read that blocks forever, an
// empty input, or a device node removed on a failed write.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "base/status.h"

namespace kite {

// The kind of file a stat mode describes, for messages: "a regular file", "a directory",
// "a FIFO", "a socket", "a character device", "a block device", "a symbolic link".
const char* FileKindName(mode_t mode);

// An open file descriptor of a regular file, closed on destruction.
class RegularFile {
 public:
  // Opens `path` read-only without blocking (a FIFO with no writer, a device) and refuses
  // anything that is not a regular file (after following symbolic links), naming the path and
  // what it is.
  static Result<RegularFile> Open(const std::string& path);

  RegularFile(RegularFile&& other) noexcept;
  RegularFile& operator=(RegularFile&& other) noexcept;
  RegularFile(const RegularFile&) = delete;
  RegularFile& operator=(const RegularFile&) = delete;
  ~RegularFile();

  int fd() const { return fd_; }
  uint64_t size() const { return size_; }

 private:
  RegularFile(int fd, uint64_t size) : fd_(fd), size_(size) {}
  int fd_ = -1;
  uint64_t size_ = 0;
};

}  // namespace kite
