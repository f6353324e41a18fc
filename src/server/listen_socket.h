// The service's listening sockets, made by Kite rather than by the HTTP library so that their
// rules are ours: a backlog of kListenBacklog (a burst of simultaneous connects is queued, not
// refused), close-on-exec and non-blocking descriptors, and for the Unix domain socket:
//   - mode 0600 (only the service's user may connect) unless told otherwise;
//   - a stale socket file (nobody accepts on it: a previous service that died) is replaced;
//   - a live one (another service answers on it), a path that is not a socket, and a path too
//     long for sockaddr_un are refused with a message naming the path.
// ListenSocket closes its descriptor, and removes the Unix socket file it made, when destroyed.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"

struct stat;

namespace kite {

inline constexpr int kListenBacklog = 1024;

class ListenSocket {
 public:
  // TCP on `host` (a numeric IPv4 or IPv6 address, or "localhost") and `port` (0: any free
  // port; port() tells which).
  static Result<ListenSocket> Tcp(const std::string& host, uint16_t port);
  // A Unix domain socket at `path`, with permission bits `mode`.
  static Result<ListenSocket> Unix(const std::string& path, uint32_t mode = 0600);

  ListenSocket(ListenSocket&& other) noexcept;
  ListenSocket& operator=(ListenSocket&& other) noexcept;
  ~ListenSocket();

  int fd() const { return fd_; }
  // Hands the descriptor to a new owner (the HTTP server), which closes it; the socket file
  // is still removed by this object.
  int Release();
  uint16_t port() const { return port_; }            // TCP only
  const std::string& path() const { return path_; }  // Unix only
  // "127.0.0.1:8080", "[::1]:8080" or "unix:/run/kite.sock", for logs.
  std::string Describe() const;

 private:
  ListenSocket() = default;
  void Close();

  int fd_ = -1;
  uint16_t port_ = 0;
  std::string host_;
  // The Unix socket file this object made (and removes), and what tells it from a file another
  // service put there later (an inode number alone may be reused at once).
  std::string path_;
  struct FileIdentity {
    uint64_t device = 0, inode = 0;
    int64_t changed_seconds = 0, changed_nanoseconds = 0;
    bool operator==(const FileIdentity&) const = default;
  };
  FileIdentity identity_;
  static FileIdentity IdentityOf(const struct stat& file);
};

}  // namespace kite
