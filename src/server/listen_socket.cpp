#include "server/listen_socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace kite {

namespace {

std::string ErrnoText(int error) { return std::strerror(error); }

int NewSocket(int family) {
  return ::socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
}

// Whether a service accepts connections on the Unix socket at `address` now. A full backlog
// (EAGAIN) is a live service too.
bool UnixSocketAnswers(const sockaddr_un& address) {
  const int probe = NewSocket(AF_UNIX);
  if (probe < 0) return false;
  const int result = ::connect(probe, reinterpret_cast<const sockaddr*>(&address), sizeof(address));
  const int error = errno;
  ::close(probe);
  return result == 0 || error == EAGAIN || error == EINPROGRESS;
}

}  // namespace

ListenSocket::FileIdentity ListenSocket::IdentityOf(const struct stat& file) {
  return {file.st_dev, file.st_ino, file.st_ctim.tv_sec, file.st_ctim.tv_nsec};
}

Result<ListenSocket> ListenSocket::Tcp(const std::string& host, uint16_t port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (int error = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &found); error != 0) {
    return InvalidInput("--host " + host + ": not an address this machine can listen on (" +
                        ::gai_strerror(error) + ")");
  }
  ListenSocket socket;
  socket.host_ = host;
  int last_error = 0;
  for (addrinfo* address = found; address != nullptr && socket.fd_ < 0;
       address = address->ai_next) {
    const int fd = NewSocket(address->ai_family);
    if (fd < 0) {
      last_error = errno;
      continue;
    }
    const int one = 1;  // a restarted service binds again while old connections sit in TIME_WAIT
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (::bind(fd, address->ai_addr, address->ai_addrlen) != 0 ||
        ::listen(fd, kListenBacklog) != 0) {
      last_error = errno;
      ::close(fd);
      continue;
    }
    socket.fd_ = fd;
  }
  ::freeaddrinfo(found);
  if (socket.fd_ < 0) {
    return InvalidInput(
        "cannot listen on " + host + ":" + service + ": " + ErrnoText(last_error) +
        (last_error == EADDRINUSE ? " (another service uses the port; --port N)" : ""));
  }
  sockaddr_storage bound{};
  socklen_t length = sizeof(bound);
  ::getsockname(socket.fd_, reinterpret_cast<sockaddr*>(&bound), &length);
  socket.port_ =
      ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                        : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  return socket;
}

Result<ListenSocket> ListenSocket::Unix(const std::string& path, uint32_t mode) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof(address.sun_path)) {
    return InvalidInput("--unix " + path + ": a Unix socket path must have 1 to " +
                        std::to_string(sizeof(address.sun_path) - 1) + " bytes (this one has " +
                        std::to_string(path.size()) + ")");
  }
  std::memcpy(address.sun_path, path.data(), path.size());

  struct stat existing {};
  if (::lstat(path.c_str(), &existing) == 0) {
    if (!S_ISSOCK(existing.st_mode)) {
      return InvalidInput("--unix " + path + ": exists and is not a socket (not replaced)");
    }
    if (UnixSocketAnswers(address)) {
      return InvalidInput("--unix " + path + ": another service is listening on it");
    }
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) {  // stale: its service is gone
      return InvalidInput("--unix " + path +
                          ": cannot replace the stale socket: " + ErrnoText(errno));
    }
  }

  ListenSocket socket;
  socket.fd_ = NewSocket(AF_UNIX);
  if (socket.fd_ < 0) return OutOfResources("--unix " + path + ": socket(): " + ErrnoText(errno));
  if (::bind(socket.fd_, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0) {
    return InvalidInput("--unix " + path + ": cannot bind: " + ErrnoText(errno));
  }
  socket.path_ = path;
  struct stat made {};
  if (::lstat(path.c_str(), &made) == 0) socket.identity_ = IdentityOf(made);
  // The mode is set before listen(): until then every connect is refused, so no client gets
  // in through the umask's wider bits.
  if (::chmod(path.c_str(), mode) != 0) {
    return InvalidInput("--unix " + path + ": cannot set its mode: " + ErrnoText(errno));
  }
  if (::lstat(path.c_str(), &made) == 0) socket.identity_ = IdentityOf(made);  // chmod changed it
  if (::listen(socket.fd_, kListenBacklog) != 0) {
    return InvalidInput("--unix " + path + ": cannot listen: " + ErrnoText(errno));
  }
  return socket;
}

ListenSocket::ListenSocket(ListenSocket&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      port_(other.port_),
      host_(std::move(other.host_)),
      path_(std::exchange(other.path_, {})),
      identity_(other.identity_) {}

ListenSocket& ListenSocket::operator=(ListenSocket&& other) noexcept {
  if (this != &other) {
    Close();
    fd_ = std::exchange(other.fd_, -1);
    port_ = other.port_;
    host_ = std::move(other.host_);
    path_ = std::exchange(other.path_, {});
    identity_ = other.identity_;
  }
  return *this;
}

ListenSocket::~ListenSocket() { Close(); }

int ListenSocket::Release() { return std::exchange(fd_, -1); }

void ListenSocket::Close() {
  if (fd_ >= 0) ::close(std::exchange(fd_, -1));
  if (!path_.empty()) {
    struct stat now {};
    if (::lstat(path_.c_str(), &now) == 0 && S_ISSOCK(now.st_mode) &&
        IdentityOf(now) == identity_) {
      ::unlink(path_.c_str());
    }
    path_.clear();
  }
}

std::string ListenSocket::Describe() const {
  if (!path_.empty()) return "unix:" + path_;
  const bool v6 = host_.find(':') != std::string::npos;
  return (v6 ? "[" + host_ + "]" : host_) + ":" + std::to_string(port_);
}

}  // namespace kite
