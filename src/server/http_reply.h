// One HTTP request being answered: what a route handler is given to reply with, from any
// thread, whole (Send) or as a stream (Start, Write..., End). The HTTP server (server/
// http_server.h) carries the calls to its I/O thread, which alone touches libevent.
//
// A client that leaves is noticed at once, also before the first byte of the reply (while a
// prompt is being computed, when libevent itself does not read the socket): the reply is then
// `gone()`, later calls do nothing, Write returns false, and the OnGone callback runs once so
// the work can be cancelled. Output the client does not read is bounded: past
// HttpLimits::max_unread_bytes the connection is dropped and the reply is gone.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <variant>
#include <vector>

struct evhttp_connection;
struct evhttp_request;
struct event;

namespace kite {

using HttpHeaders = std::vector<std::pair<std::string, std::string>>;

struct HttpResponse {
  int status = 200;
  HttpHeaders headers;  // Content-Type among them, when there is a body
  std::string body;
};

class HttpServer;

class HttpReply : public std::enable_shared_from_this<HttpReply> {
 public:
  // A whole response; the exchange ends. Only the first of Send / Start counts.
  void Send(HttpResponse response);
  // A streamed response: the status and headers now, then each Write as one HTTP chunk.
  void Start(int status, HttpHeaders headers);
  // False once the client is gone (nothing is queued then).
  bool Write(std::string data);
  // Ends a streamed response.
  void End();

  bool gone() const { return gone_.load(std::memory_order_acquire); }
  // Runs once, on the server's I/O thread, if the client leaves (or its unread output passes
  // the bound, or the server stops) before the reply ended; at once if it already left. The
  // handler sets it before it returns.
  void OnGone(std::function<void()> on_gone);

 private:
  friend class HttpServer;
  struct StartOp {
    int status;
    HttpHeaders headers;
  };
  struct ChunkOp {
    std::string data;
  };
  struct EndOp {};
  using Op = std::variant<HttpResponse, StartOp, ChunkOp, EndOp>;

  explicit HttpReply(HttpServer* server) : server_(server) {}

  HttpServer* const server_;
  std::atomic<bool> gone_{false};
  std::mutex mutex_;  // guards ops_, on_gone_ and ended_
  std::vector<Op> ops_;
  std::function<void()> on_gone_;
  bool started_ = false;  // Send or Start was called
  bool ended_ = false;    // Send or End was called

  // I/O thread only.
  evhttp_request* request_ = nullptr;  // null once the reply is handed back or the client left
  event* watcher_ = nullptr;           // watches the socket until the reply starts
  // The connection whose close callback points at this reply, until HttpServer::Finish (or a
  // drop, before it frees the connection) clears the callback: ForgetConnection.
  evhttp_connection* closes_ = nullptr;
  bool finished_ = false;              // the exchange is over for the server
};

}  // namespace kite
