// `kite serve`'s service: the listening sockets, the HTTP server with every endpoint on one
// router, and — once loaded — the engine and its scheduler. It listens first and loads after,
// so /health answers 503 while the model loads. A Bearer API key, when set, is asked on every
// endpoint but /health (401 in OpenAI's envelope otherwise). No CORS headers are sent: browsers
// on other origins are not let in.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/status.h"
#include "server/listen_socket.h"
#include "server/service_state.h"

namespace kite {

class Service {
 public:
  // Makes the sockets and starts the HTTP server; nothing is loaded yet.
  static Result<std::unique_ptr<Service>> Listen(ServeOptions options);
  ~Service();  // Shutdown(0)

  // Loads options.settings.model and starts the scheduler; the endpoints are ready after.
  Status Load();
  // The same with an engine loaded elsewhere (tests).
  Status Adopt(std::unique_ptr<Engine> engine);

  // SIGTERM: stops accepting, ends every request (a stream gets an error event and [DONE]),
  // lets the replies be written for at most `drain`, then stops and removes the Unix socket
  // file. Idempotent; may be called while Load runs on another thread (which then fails).
  void Shutdown(std::chrono::milliseconds drain);

  // Where it listens: "127.0.0.1:8080", "unix:/run/kite.sock".
  std::vector<std::string> Addresses() const { return addresses_; }
  uint16_t port() const { return port_; }
  const ServiceState& state() const { return state_; }

 private:
  Service() = default;
  void AddRoutes();

  ServiceState state_;
  std::unique_ptr<HttpServer> http_;
  std::vector<ListenSocket> sockets_;  // remove the Unix socket file on destruction
  std::vector<std::string> addresses_;
  uint16_t port_ = 0;
  std::mutex mutex_;  // Adopt and Shutdown, which may run on two threads
  bool shut_down_ = false;
};

}  // namespace kite
