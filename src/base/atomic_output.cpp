#include "base/atomic_output.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <mutex>
#include <utility>

#include "base/file_check.h"

namespace kite {

namespace {

// The temporaries being written, for the signal handler: their folder's descriptor and their name
// in it (not a path, which a relative working directory would make fragile). Fixed storage,
// because a signal handler may not allocate.
constexpr int kSlots = 16;
enum SlotState : int { kFree, kLive, kRemoved };
struct Slot {
  std::atomic<int> state{kFree};
  int dir_fd = -1;
  char name[NAME_MAX + 1] = {};
};
Slot g_slots[kSlots];

constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};
struct sigaction g_previous[std::size(kSignals)];
bool g_installed[std::size(kSignals)] = {};
std::mutex g_mutex;  // guards the table's claims and the handlers' installation
int g_live = 0;

// Async-signal-safe: removes every live temporary, puts the previous action back and raises the
// signal again, so that the process ends as it would have (or a handler of the program runs).
extern "C" void RemoveTemporariesOnSignal(int sig) {
  const int saved_errno = errno;
  for (Slot& slot : g_slots) {
    int live = kLive;
    if (slot.state.compare_exchange_strong(live, kRemoved)) ::unlinkat(slot.dir_fd, slot.name, 0);
  }
  for (size_t i = 0; i < std::size(kSignals); ++i) {
    if (kSignals[i] == sig) ::sigaction(sig, &g_previous[i], nullptr);
  }
  errno = saved_errno;
  ::raise(sig);
}

// Installs the handler while at least one temporary exists (not for a signal the process
// ignores, as under nohup), and puts the previous actions back after the last one.
int ClaimSlot(int dir_fd, const std::string& name) {
  std::lock_guard lock(g_mutex);
  for (int i = 0; i < kSlots; ++i) {
    Slot& slot = g_slots[i];
    if (slot.state.load() != kFree) continue;
    slot.dir_fd = dir_fd;
    std::memcpy(slot.name, name.c_str(), name.size() + 1);
    if (g_live++ == 0) {
      for (size_t s = 0; s < std::size(kSignals); ++s) {
        struct sigaction action {};
        action.sa_handler = RemoveTemporariesOnSignal;
        sigemptyset(&action.sa_mask);
        ::sigaction(kSignals[s], nullptr, &g_previous[s]);
        g_installed[s] = g_previous[s].sa_handler != SIG_IGN;
        if (g_installed[s]) ::sigaction(kSignals[s], &action, nullptr);
      }
    }
    slot.state.store(kLive);
    return i;
  }
  return -1;
}

// Returns whether the signal handler removed the slot's temporary.
bool ReleaseSlot(int index) {
  std::lock_guard lock(g_mutex);
  const bool removed = g_slots[index].state.exchange(kFree) == kRemoved;
  if (--g_live == 0) {
    for (size_t s = 0; s < std::size(kSignals); ++s) {
      struct sigaction current {};
      ::sigaction(kSignals[s], nullptr, &current);
      // Only our own handler is replaced: a handler the program set since stays.
      if (g_installed[s] && current.sa_handler == RemoveTemporariesOnSignal) {
        ::sigaction(kSignals[s], &g_previous[s], nullptr);
      }
      g_installed[s] = false;
    }
  }
  return removed;
}

std::unexpected<Error> SystemError(const std::string& what, int err) {
  return MakeError(err == ENOENT ? ErrorCode::kNotFound : ErrorCode::kOutOfResources,
                   what + ": " + std::strerror(err));
}

// The target may be absent or a regular file; anything else is refused, never replaced.
Status CheckTarget(const std::string& target, int dir_fd, const std::string& name, struct stat* st,
                   bool* exists) {
  *exists = false;
  if (::fstatat(dir_fd, name.c_str(), st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT) return Ok();
    return SystemError(target + ": cannot stat the output", errno);
  }
  if (S_ISLNK(st->st_mode)) {
    return InvalidInput(target +
                        ": is a symbolic link; Kite does not write through links or replace "
                        "them (name the file it points to, or remove the link first)");
  }
  if (!S_ISREG(st->st_mode)) {
    return InvalidInput(target + ": is " + FileKindName(st->st_mode) +
                        ", not a regular file; Kite writes only regular files (and leaves this "
                        "one as it is)");
  }
  *exists = true;
  return Ok();
}

Status CheckNotAnInput(const std::string& target, const struct stat& target_st,
                       const std::vector<std::string>& inputs) {
  const auto same = [&](const char* path) {
    struct stat st {};
    return ::stat(path, &st) == 0 && st.st_dev == target_st.st_dev && st.st_ino == target_st.st_ino;
  };
  const auto refuse = [&](const std::string& input) {
    return InvalidInput(target + ": is the same file as " + input +
                        ", which this command reads; writing it would destroy that input "
                        "(choose another output path)");
  };
  namespace fs = std::filesystem;
  for (const std::string& input : inputs) {
    if (same(input.c_str())) return refuse(input);
    std::error_code error;
    if (!fs::is_directory(input, error)) continue;
    for (const fs::directory_entry& entry : fs::directory_iterator(input, error)) {
      if (entry.path().extension() == ".gguf") continue;
      if (same(entry.path().c_str())) return refuse(entry.path().string());
    }
  }
  return Ok();
}

}  // namespace

Result<AtomicOutput> AtomicOutput::Create(const std::string& target,
                                          const std::vector<std::string>& inputs) {
  AtomicOutput out;
  out.target_ = target;
  const size_t slash = target.rfind('/');
  const std::string dir = slash == std::string::npos ? "."
                          : slash == 0               ? "/"
                                                     : target.substr(0, slash);
  out.name_ = slash == std::string::npos ? target : target.substr(slash + 1);
  if (out.name_.empty() || out.name_ == "." || out.name_ == "..") {
    return InvalidInput(target + ": names a folder; expected the path of a file to write");
  }
  out.dir_fd_ = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (out.dir_fd_ < 0) return SystemError(target + ": cannot open the folder " + dir, errno);

  struct stat target_st {};
  bool exists = false;
  KITE_RETURN_IF_ERROR(CheckTarget(target, out.dir_fd_, out.name_, &target_st, &exists));
  if (exists) KITE_RETURN_IF_ERROR(CheckNotAnInput(target, target_st, inputs));

  static std::atomic<uint64_t> counter{0};
  const std::string stem =
      out.name_.substr(0, NAME_MAX - 40) + ".kite-tmp-" + std::to_string(::getpid()) + "-";
  for (int attempt = 0; attempt < 100 && out.fd_ < 0; ++attempt) {
    out.temp_name_ = stem + std::to_string(counter++);
    // The signal handler knows the name before the file exists, so that no signal can leave it
    // behind. (Should the name be taken, it is a temporary left by a killed process of the same
    // pid: removing that one on a signal is no loss.)
    out.slot_ = ClaimSlot(out.dir_fd_, out.temp_name_);
    if (out.slot_ < 0) {
      return OutOfResources(target + ": more than " + std::to_string(kSlots) +
                            " files are being written at once");
    }
    out.fd_ =
        ::openat(out.dir_fd_, out.temp_name_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (out.fd_ >= 0) break;
    const int err = errno;
    ReleaseSlot(std::exchange(out.slot_, -1));
    if (err != EEXIST) {
      return SystemError(target + ": cannot create " + out.temp_name_ + " in " + dir, err);
    }
  }
  if (out.fd_ < 0) return Internal(target + ": no unused temporary name in " + dir);
  out.temp_path_ = (slash == std::string::npos ? "" : target.substr(0, slash + 1)) + out.temp_name_;
  if (exists) ::fchmod(out.fd_, target_st.st_mode & 07777);  // best effort, as editors do
  return out;
}

AtomicOutput::AtomicOutput(AtomicOutput&& other) noexcept
    : target_(std::move(other.target_)),
      temp_path_(std::move(other.temp_path_)),
      name_(std::move(other.name_)),
      temp_name_(std::move(other.temp_name_)),
      dir_fd_(std::exchange(other.dir_fd_, -1)),
      fd_(std::exchange(other.fd_, -1)),
      slot_(std::exchange(other.slot_, -1)),
      position_(other.position_) {}

AtomicOutput& AtomicOutput::operator=(AtomicOutput&& other) noexcept {
  if (this != &other) {
    Discard();
    target_ = std::move(other.target_);
    temp_path_ = std::move(other.temp_path_);
    name_ = std::move(other.name_);
    temp_name_ = std::move(other.temp_name_);
    dir_fd_ = std::exchange(other.dir_fd_, -1);
    fd_ = std::exchange(other.fd_, -1);
    slot_ = std::exchange(other.slot_, -1);
    position_ = other.position_;
  }
  return *this;
}

AtomicOutput::~AtomicOutput() { Discard(); }

void AtomicOutput::Discard() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (slot_ >= 0) {
    // Removed before the slot is freed: a signal in between finds it gone, not left behind.
    ::unlinkat(dir_fd_, temp_name_.c_str(), 0);
    ReleaseSlot(slot_);
    slot_ = -1;
  }
  if (dir_fd_ >= 0) ::close(dir_fd_);
  dir_fd_ = -1;
}

Status AtomicOutput::Write(std::span<const uint8_t> bytes) {
  KITE_RETURN_IF_ERROR(WriteAt(position_, bytes));
  position_ += bytes.size();
  return Ok();
}

Status AtomicOutput::Write(std::string_view text) {
  return Write({reinterpret_cast<const uint8_t*>(text.data()), text.size()});
}

Status AtomicOutput::WriteAt(uint64_t offset, std::span<const uint8_t> bytes) {
  if (fd_ < 0) return Internal(target_ + ": written after Commit");
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n =
        ::pwrite(fd_, bytes.data() + done, bytes.size() - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return SystemError(target_ + ": write failed", n < 0 ? errno : ENOSPC);
    done += static_cast<size_t>(n);
  }
  return Ok();
}

Status AtomicOutput::Commit() {
  if (fd_ < 0) return Internal(target_ + ": committed twice");
  // The data must be on disk before the name points at it, or a crash could leave an empty file
  // under the target's name.
  if (::fsync(fd_) != 0) return SystemError(target_ + ": fsync failed", errno);
  const int fd = std::exchange(fd_, -1);
  if (::close(fd) != 0) return SystemError(target_ + ": write failed", errno);
  // The target may have been replaced while the file was written.
  struct stat target_st {};
  bool exists = false;
  KITE_RETURN_IF_ERROR(CheckTarget(target_, dir_fd_, name_, &target_st, &exists));
  if (::renameat(dir_fd_, temp_name_.c_str(), dir_fd_, name_.c_str()) != 0) {
    const int err = errno;
    if (g_slots[slot_].state.load() == kRemoved) {
      return OutOfResources(target_ + ": interrupted by a signal; the file was not written");
    }
    return SystemError(target_ + ": cannot rename " + temp_name_ + " to it", err);
  }
  ReleaseSlot(slot_);
  slot_ = -1;
  // Makes the rename itself durable. It has happened either way, so a folder that cannot be
  // synced (some file systems refuse) is no error.
  ::fsync(dir_fd_);
  ::close(std::exchange(dir_fd_, -1));
  return Ok();
}

}  // namespace kite
