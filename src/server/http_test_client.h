// For the server's tests: a raw socket client (TCP or Unix) that sends bytes as given and reads
// what comes back, so tests can do what real clients do badly (leave early, never read).
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <string>

namespace kite::testing {

class RawClient {
 public:
  static RawClient Tcp(uint16_t port) {
    RawClient client;
    client.fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    client.connected_ =
        ::connect(client.fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0;
    return client;
  }
  static RawClient Unix(const std::string& path) {
    RawClient client;
    client.fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strncpy(address.sun_path, path.c_str(), sizeof(address.sun_path) - 1);
    client.connected_ =
        ::connect(client.fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0;
    return client;
  }
  RawClient(RawClient&& other) noexcept : fd_(other.fd_), connected_(other.connected_) {
    other.fd_ = -1;
  }
  ~RawClient() { Close(); }

  bool connected() const { return connected_; }
  int fd() const { return fd_; }
  bool Send(const std::string& data) {
    size_t sent = 0;
    while (sent < data.size()) {
      const ssize_t n = ::send(fd_, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) return false;
      sent += static_cast<size_t>(n);
    }
    return true;
  }
  // Reads until `until` appears in what was read, the peer closes, or `timeout` passes.
  std::string Read(const std::string& until = "",
                   std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (until.empty() || received_.find(until) == std::string::npos) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) break;
      pollfd ready{fd_, POLLIN, 0};
      if (::poll(&ready, 1, static_cast<int>(left.count())) <= 0) break;
      char buffer[65536];
      const ssize_t n = ::recv(fd_, buffer, sizeof(buffer), 0);
      if (n <= 0) {
        closed_by_peer_ = true;
        break;
      }
      received_.append(buffer, static_cast<size_t>(n));
    }
    return received_;
  }
  bool closed_by_peer() const { return closed_by_peer_; }
  // A reset instead of an orderly close (SO_LINGER 0), as a killed client's kernel may send.
  void Reset() {
    linger hard{1, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_LINGER, &hard, sizeof(hard));
    Close();
  }
  void Close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  RawClient() = default;
  int fd_ = -1;
  bool connected_ = false;
  bool closed_by_peer_ = false;
  std::string received_;
};

inline std::string PostRequest(const std::string& path, const std::string& body) {
  return "POST " + path +
         " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + body;
}
inline std::string GetRequest(const std::string& path) {
  return "GET " + path + " HTTP/1.1\r\nHost: x\r\n\r\n";
}

}  // namespace kite::testing
