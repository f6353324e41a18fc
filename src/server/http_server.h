// The service's HTTP/1.1 server: libevent's evhttp on one I/O thread, serving any number of
// listening sockets (TCP and a Unix domain socket at once) with one router. Handlers run on the
// I/O thread and must return quickly; they answer through an HttpReply, from any thread.
//
// What Kite adds to evhttp 2.1.12, which would otherwise:
//   - not notice a client that leaves before the reply's first byte (it stops reading the socket
//     once a request is read): a watcher on the socket until the reply starts;
//   - cut a long stream when its read timeout passes (it keeps the read timeout while writing):
//     replies run with the write timeout only, the read timeout is back for the next request;
//   - buffer without bound what a client does not read: past max_unread_bytes it is dropped;
//   - spin in accept() when the process is out of descriptors (a level-triggered listener that
//     fails at once): the listener pauses for kAcceptPause and tries again;
//   - answer a too-large body with a reset (it closes with the body unread): it drains first.
// Too-large bodies and headers are answered by evhttp itself (413 / 400, its own short page).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "server/http_reply.h"
#include "server/listen_socket.h"

struct event_base;
struct evhttp;
struct evhttp_request;
struct evhttp_connection;
struct evconnlistener;
struct event;

namespace kite {

struct HttpRequest {
  std::string method;  // "GET", "POST", ...
  std::string path;    // without the query
  std::string query;   // after '?', undecoded
  std::string body;
  std::string transport;  // "tcp" or "unix"
  std::string peer;       // "127.0.0.1:51234", or "unix" on the Unix socket
  HttpHeaders headers;
  // The value of header `name` (any case), or nullptr.
  const std::string* Header(std::string_view name) const;
};

using HttpHandler = std::function<void(const HttpRequest&, std::shared_ptr<HttpReply>)>;
// The reply to a request no route takes: status 404 (unknown path) or 405 (another method).
using HttpErrorPage = std::function<HttpResponse(int status, const std::string& message)>;

struct HttpLimits {
  size_t max_body_bytes = 8u << 20;
  size_t max_header_bytes = 64u << 10;
  // A request must arrive whole, and an idle keep-alive connection send its next one, within
  // this; a reply's output must make progress within write_timeout (time spent computing with
  // nothing to send does not count).
  std::chrono::milliseconds read_timeout{30000};
  std::chrono::milliseconds write_timeout{60000};
  size_t max_unread_bytes = 4u << 20;
};

inline constexpr std::chrono::milliseconds kAcceptPause{100};

struct HttpStats {
  int64_t replies_open = 0;    // requests handed to a handler and not yet answered in full
  uint64_t requests = 0;       // handed to handlers, since start
  uint64_t clients_gone = 0;   // replies whose client left before the end
  uint64_t unread_drops = 0;   // connections dropped for unread output
  uint64_t accept_pauses = 0;  // accept() failures that paused a listener (no descriptors)
};

class HttpServer {
 public:
  static Result<std::unique_ptr<HttpServer>> Create(const HttpLimits& limits);
  ~HttpServer();  // Stop(0)
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Before Start: `handler` answers `method` on `path` (exact match).
  void Route(const std::string& method, const std::string& path, HttpHandler handler);
  void SetErrorPage(HttpErrorPage page);
  // Before Start: serves on the socket (the server takes its descriptor; the ListenSocket still
  // removes its file).
  Status Listen(ListenSocket& socket);

  // Starts the I/O thread.
  Status Start();
  // Stops accepting, lets replies already ended finish writing (at most `drain`), then makes
  // every reply still open gone (OnGone runs) and stops the I/O thread. Idempotent.
  void Stop(std::chrono::milliseconds drain = std::chrono::milliseconds(0));
  // Stops accepting new connections (SIGTERM's first step); requests already read go on.
  void StopAccepting();

  HttpStats Stats() const;
  const HttpLimits& limits() const { return limits_; }

 private:
  friend class HttpReply;
  HttpServer(const HttpLimits& limits) : limits_(limits) {}

  // Any thread: `reply` has ops to carry out on the I/O thread.
  void Wake(std::shared_ptr<HttpReply> reply);
  // Any thread: runs `task` on the I/O thread.
  void Post(std::function<void()> task);
  void OnWake();  // I/O thread from here on
  void Dispatch(evhttp_request* request);
  void Carry(const std::shared_ptr<HttpReply>& reply);
  void WatchSocket(HttpReply& reply);
  void StopWatching(HttpReply& reply);
  // The client left (or is dropped): the reply is gone, the connection freed.
  void Gone(HttpReply& reply, bool drop_connection);
  void Finish(HttpReply& reply);
  // Clears the close callback that names `reply` (HttpReply::closes_), if it is still set.
  void ForgetConnection(HttpReply& reply);
  void RunOnGone(HttpReply& reply);
  void OnAcceptError(evconnlistener* listener);
  void CheckDrained();

  static void DispatchCallback(evhttp_request* request, void* self);
  static void WakeCallback(int fd, short what, void* self);
  static void WatchCallback(int fd, short what, void* reply);
  static void ConnectionClosed(evhttp_connection* connection, void* reply);
  static void ReplyComplete(evhttp_request* request, void* reply);
  static void AcceptError(evconnlistener* listener, void* self);
  static void ResumeAccepting(int fd, short what, void* self);
  static void DrainCheck(int fd, short what, void* self);

  HttpLimits limits_;
  event_base* base_ = nullptr;
  evhttp* http_ = nullptr;
  event* wake_ = nullptr;
  event* resume_ = nullptr;                 // the timer that re-enables paused listeners
  event* drain_ = nullptr;                  // Stop's timer: have the ended replies been written?
  std::vector<evconnlistener*> listeners_;  // freed by evhttp_free
  std::map<std::pair<std::string, std::string>, HttpHandler> routes_;  // (path, method)
  HttpErrorPage error_page_;
  std::thread thread_;
  std::mutex stop_mutex_;  // one Stop at a time
  bool stopped_ = false;

  mutable std::mutex mutex_;  // guards woken_, tasks_ and stats_
  std::vector<std::shared_ptr<HttpReply>> woken_;
  std::vector<std::function<void()>> tasks_;
  HttpStats stats_;
  // I/O thread only: every reply not yet finished.
  std::unordered_map<HttpReply*, std::shared_ptr<HttpReply>> open_;
  bool accepting_ = true;
  std::chrono::steady_clock::time_point drain_deadline_;
};

}  // namespace kite
