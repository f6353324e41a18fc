#include "server/http_server.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <event2/listener.h>
#include <event2/thread.h>
#include <sys/socket.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <mutex>
#include <unordered_map>

namespace kite {

namespace {

timeval ToTimeval(std::chrono::milliseconds duration) {
  return timeval{static_cast<time_t>(duration.count() / 1000),
                 static_cast<suseconds_t>(duration.count() % 1000 * 1000)};
}

const char* MethodName(evhttp_cmd_type command) {
  switch (command) {
    case EVHTTP_REQ_GET:
      return "GET";
    case EVHTTP_REQ_POST:
      return "POST";
    case EVHTTP_REQ_HEAD:
      return "HEAD";
    case EVHTTP_REQ_PUT:
      return "PUT";
    case EVHTTP_REQ_DELETE:
      return "DELETE";
    case EVHTTP_REQ_OPTIONS:
      return "OPTIONS";
    case EVHTTP_REQ_TRACE:
      return "TRACE";
    case EVHTTP_REQ_CONNECT:
      return "CONNECT";
    case EVHTTP_REQ_PATCH:
      return "PATCH";
  }
  return "?";
}

int ConnectionFd(evhttp_request* request) {
  evhttp_connection* connection = evhttp_request_get_connection(request);
  return connection ? bufferevent_getfd(evhttp_connection_get_bufferevent(connection)) : -1;
}

bool EqualsIgnoringCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

// evhttp gives a listener's error callback its own evhttp as the user data: which server it is.
std::mutex servers_mutex;
std::unordered_map<evhttp*, HttpServer*> servers;

}  // namespace

const std::string* HttpRequest::Header(std::string_view name) const {
  for (const auto& [key, value] : headers) {
    if (EqualsIgnoringCase(key, name)) return &value;
  }
  return nullptr;
}

Result<std::unique_ptr<HttpServer>> HttpServer::Create(const HttpLimits& limits) {
  static const int threads = evthread_use_pthreads();  // event_active from other threads
  if (threads != 0) return Internal("libevent: no pthreads support");
  std::unique_ptr<HttpServer> server(new HttpServer(limits));
  server->base_ = event_base_new();
  if (server->base_ == nullptr) return OutOfResources("libevent: cannot make an event base");
  server->http_ = evhttp_new(server->base_);
  server->wake_ = event_new(server->base_, -1, 0, WakeCallback, server.get());
  server->resume_ = evtimer_new(server->base_, ResumeAccepting, server.get());
  server->drain_ = evtimer_new(server->base_, DrainCheck, server.get());
  if (!server->http_ || !server->wake_ || !server->resume_ || !server->drain_) {
    return OutOfResources("libevent: cannot make the HTTP server");
  }
  evhttp_set_max_body_size(server->http_, static_cast<ev_ssize_t>(limits.max_body_bytes));
  evhttp_set_max_headers_size(server->http_, static_cast<ev_ssize_t>(limits.max_header_bytes));
  const timeval read_timeout = ToTimeval(limits.read_timeout);
  evhttp_set_timeout_tv(server->http_, &read_timeout);
  // A too-large body is read (and dropped) before the 413 goes out: closing with it unread
  // would make the kernel answer with a reset, which the client sees instead of the 413.
  evhttp_set_flags(server->http_, EVHTTP_SERVER_LINGERING_CLOSE);
  // Every method reaches the router, which answers 405 itself.
  evhttp_set_allowed_methods(server->http_, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_HEAD |
                                                EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE |
                                                EVHTTP_REQ_OPTIONS | EVHTTP_REQ_TRACE |
                                                EVHTTP_REQ_CONNECT | EVHTTP_REQ_PATCH);
  evhttp_set_gencb(server->http_, DispatchCallback, server.get());
  std::lock_guard lock(servers_mutex);
  servers[server->http_] = server.get();
  return server;
}

HttpServer::~HttpServer() {
  Stop();
  {
    std::lock_guard lock(servers_mutex);
    servers.erase(http_);
  }
  if (http_) evhttp_free(http_);  // frees the listeners and every connection left
  for (event* timer : {wake_, resume_, drain_}) {
    if (timer) event_free(timer);
  }
  if (base_) event_base_free(base_);
}

void HttpServer::Route(const std::string& method, const std::string& path, HttpHandler handler) {
  routes_[{path, method}] = std::move(handler);
}

void HttpServer::SetErrorPage(HttpErrorPage page) { error_page_ = std::move(page); }

Status HttpServer::Listen(ListenSocket& socket) {
  evconnlistener* listener =
      evconnlistener_new(base_, nullptr, nullptr, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC,
                         0,  // Kite listened with its own backlog
                         socket.fd());
  if (listener == nullptr) return OutOfResources("libevent: cannot listen on " + socket.Describe());
  socket.Release();
  evconnlistener_set_error_cb(listener, AcceptError);
  evhttp_bind_listener(http_, listener);  // sets evhttp's accept callback
  listeners_.push_back(listener);
  return Ok();
}

Status HttpServer::Start() {
  thread_ = std::thread([this] { event_base_loop(base_, EVLOOP_NO_EXIT_ON_EMPTY); });
  return Ok();
}

void HttpServer::StopAccepting() {
  Post([this] {
    accepting_ = false;
    for (evconnlistener* listener : listeners_) evconnlistener_disable(listener);
  });
}

void HttpServer::Stop(std::chrono::milliseconds drain) {
  std::lock_guard stop_lock(stop_mutex_);
  if (stopped_ || !thread_.joinable()) return;
  stopped_ = true;
  StopAccepting();
  Post([this, drain] {
    drain_deadline_ = std::chrono::steady_clock::now() + drain;
    CheckDrained();
  });
  thread_.join();
}

void HttpServer::CheckDrained() {
  // Done when every reply still open is one its handler has not ended (nothing more is coming
  // for it) — or when the time is up.
  const bool waiting = std::any_of(open_.begin(), open_.end(), [](const auto& entry) {
    std::lock_guard lock(entry.first->mutex_);
    return entry.first->ended_;
  });
  if (waiting && std::chrono::steady_clock::now() < drain_deadline_) {
    const timeval again = ToTimeval(std::chrono::milliseconds(5));
    evtimer_add(drain_, &again);
    return;
  }
  while (!open_.empty()) Gone(*open_.begin()->first, /*drop_connection=*/true);
  event_base_loopbreak(base_);
}

HttpStats HttpServer::Stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

void HttpServer::Wake(std::shared_ptr<HttpReply> reply) {
  {
    std::lock_guard lock(mutex_);
    woken_.push_back(std::move(reply));
  }
  event_active(wake_, EV_READ, 0);
}

void HttpServer::Post(std::function<void()> task) {
  {
    std::lock_guard lock(mutex_);
    tasks_.push_back(std::move(task));
  }
  event_active(wake_, EV_READ, 0);
}

void HttpServer::OnWake() {
  std::vector<std::shared_ptr<HttpReply>> woken;
  std::vector<std::function<void()>> tasks;
  {
    std::lock_guard lock(mutex_);
    woken.swap(woken_);
    tasks.swap(tasks_);
  }
  for (const auto& reply : woken) Carry(reply);
  for (auto& task : tasks) task();
}

void HttpServer::Dispatch(evhttp_request* request) {
  auto reply = std::shared_ptr<HttpReply>(new HttpReply(this));
  reply->request_ = request;
  open_[reply.get()] = reply;
  {
    std::lock_guard lock(mutex_);
    ++stats_.requests;
    ++stats_.replies_open;
  }
  evhttp_connection* connection = evhttp_request_get_connection(request);
  evhttp_connection_set_closecb(connection, ConnectionClosed, reply.get());
  reply->closes_ = connection;
  evhttp_request_set_on_complete_cb(request, ReplyComplete, reply.get());
  WatchSocket(*reply);

  HttpRequest parsed;
  parsed.method = MethodName(evhttp_request_get_command(request));
  const std::string uri = evhttp_request_get_uri(request);
  const size_t query = uri.find('?');
  parsed.path = uri.substr(0, query);
  if (query != std::string::npos) parsed.query = uri.substr(query + 1);
  const evkeyvalq* headers = evhttp_request_get_input_headers(request);
  for (const evkeyval* header = headers->tqh_first; header; header = header->next.tqe_next) {
    parsed.headers.emplace_back(header->key, header->value);
  }
  evbuffer* body = evhttp_request_get_input_buffer(request);
  parsed.body.resize(evbuffer_get_length(body));
  evbuffer_copyout(body, parsed.body.data(), parsed.body.size());
  sockaddr_storage local{};
  socklen_t length = sizeof(local);
  const bool unix_socket =
      getsockname(ConnectionFd(request), reinterpret_cast<sockaddr*>(&local), &length) == 0 &&
      local.ss_family == AF_UNIX;
  parsed.transport = unix_socket ? "unix" : "tcp";
  if (unix_socket) {
    parsed.peer = "unix";
  } else {
    char* address = nullptr;
    uint16_t port = 0;
    evhttp_connection_get_peer(connection, &address, &port);
    parsed.peer = std::string(address ? address : "?") + ":" + std::to_string(port);
  }

  auto route = routes_.find({parsed.path, parsed.method});
  if (route != routes_.end()) {
    route->second(parsed, reply);
    return;
  }
  std::string allowed;
  for (const auto& [key, handler] : routes_) {
    if (key.first == parsed.path) allowed += (allowed.empty() ? "" : ", ") + key.second;
  }
  const int status = allowed.empty() ? 404 : 405;
  const std::string message = allowed.empty()
                                  ? "no such endpoint: " + parsed.path
                                  : parsed.path + " takes " + allowed + ", not " + parsed.method;
  HttpResponse response =
      error_page_ ? error_page_(status, message)
                  : HttpResponse{status, {{"Content-Type", "text/plain"}}, message + "\n"};
  if (!allowed.empty()) response.headers.emplace_back("Allow", allowed);
  reply->Send(std::move(response));
}

void HttpServer::Carry(const std::shared_ptr<HttpReply>& reply) {
  std::vector<HttpReply::Op> ops;
  {
    std::lock_guard lock(reply->mutex_);
    ops.swap(reply->ops_);
  }
  for (HttpReply::Op& op : ops) {
    evhttp_request* request = reply->request_;
    if (request == nullptr) return;  // the client left, or the reply was handed over
    evhttp_connection* connection = evhttp_request_get_connection(request);
    bufferevent* socket = connection ? evhttp_connection_get_bufferevent(connection) : nullptr;
    auto begin = [&](const HttpHeaders& headers) {
      StopWatching(*reply);  // evhttp watches the socket while it writes
      evkeyvalq* out = evhttp_request_get_output_headers(request);
      for (const auto& [key, value] : headers) evhttp_add_header(out, key.c_str(), value.c_str());
      // While the reply is written the read timeout would cut a long stream: only the write
      // timeout runs (ReplyComplete restores the read timeout for the next request).
      const timeval write_timeout = ToTimeval(limits_.write_timeout);
      if (socket) bufferevent_set_timeouts(socket, nullptr, &write_timeout);
    };
    if (auto* whole = std::get_if<HttpResponse>(&op)) {
      begin(whole->headers);
      evbuffer* body = evbuffer_new();
      evbuffer_add(body, whole->body.data(), whole->body.size());
      reply->request_ = nullptr;  // ReplyComplete or ConnectionClosed finish it
      evhttp_send_reply(request, whole->status, nullptr, body);
      evbuffer_free(body);
    } else if (auto* start = std::get_if<HttpReply::StartOp>(&op)) {
      begin(start->headers);
      evhttp_send_reply_start(request, start->status, nullptr);
    } else if (auto* chunk = std::get_if<HttpReply::ChunkOp>(&op)) {
      evbuffer* data = evbuffer_new();
      evbuffer_add(data, chunk->data.data(), chunk->data.size());
      evhttp_send_reply_chunk(request, data);
      evbuffer_free(data);
      if (socket &&
          evbuffer_get_length(bufferevent_get_output(socket)) > limits_.max_unread_bytes) {
        {
          std::lock_guard lock(mutex_);
          ++stats_.unread_drops;
        }
        Gone(*reply, /*drop_connection=*/true);
        return;
      }
    } else {
      reply->request_ = nullptr;
      evhttp_send_reply_end(request);
    }
  }
}

void HttpServer::WatchSocket(HttpReply& reply) {
  const int fd = ConnectionFd(reply.request_);
  if (fd < 0) return;
  // EV_CLOSED sees an orderly close (EPOLLRDHUP); a reset comes as EV_READ (EPOLLERR).
  reply.watcher_ = event_new(base_, fd, EV_READ | EV_CLOSED | EV_PERSIST, WatchCallback, &reply);
  if (reply.watcher_) event_add(reply.watcher_, nullptr);
}

void HttpServer::StopWatching(HttpReply& reply) {
  if (reply.watcher_ == nullptr) return;
  event_free(reply.watcher_);  // deletes it from epoll before anyone closes the descriptor
  reply.watcher_ = nullptr;
}

void HttpServer::Gone(HttpReply& reply, bool drop_connection) {
  if (reply.finished_) return;
  StopWatching(reply);
  reply.gone_.store(true, std::memory_order_release);
  if (evhttp_request* request = std::exchange(reply.request_, nullptr)) {
    evhttp_connection* connection = evhttp_request_get_connection(request);
    if (connection == nullptr) {
      evhttp_request_free(request);  // evhttp let go of it when the connection failed
    } else if (drop_connection) {
      ForgetConnection(reply);
      evhttp_connection_free(connection);  // frees the request too
    }
  }
  bool ended = false;
  std::function<void()> on_gone;
  {
    std::lock_guard lock(reply.mutex_);
    ended = reply.ended_;
    on_gone = std::exchange(reply.on_gone_, {});
  }
  if (!ended) {
    std::lock_guard lock(mutex_);
    ++stats_.clients_gone;
  }
  Finish(reply);  // `reply` may be destroyed from here on
  if (!ended && on_gone) on_gone();
}

void HttpServer::ForgetConnection(HttpReply& reply) {
  if (reply.closes_ == nullptr) return;
  evhttp_connection_set_closecb(reply.closes_, nullptr, nullptr);
  reply.closes_ = nullptr;
}

void HttpServer::Finish(HttpReply& reply) {
  if (reply.finished_) return;
  reply.finished_ = true;
  StopWatching(reply);
  // Every end of a reply comes here, so no reply outlives a close callback that names it: one
  // dropped while evhttp still wrote its response (Gone without a request, as Stop's drain
  // does) left it on the connection, and evhttp_free called it with the freed reply.
  ForgetConnection(reply);
  {
    std::lock_guard lock(mutex_);
    --stats_.replies_open;
  }
  open_.erase(&reply);
}

void HttpServer::OnAcceptError(evconnlistener* listener) {
  // EMFILE/ENFILE/ENOBUFS: accept() fails at once as long as the listener is readable, so it
  // rests for kAcceptPause; the connections wait in the backlog meanwhile.
  evconnlistener_disable(listener);
  {
    std::lock_guard lock(mutex_);
    ++stats_.accept_pauses;
  }
  const timeval pause = ToTimeval(kAcceptPause);
  evtimer_add(resume_, &pause);
}

void HttpServer::DispatchCallback(evhttp_request* request, void* self) {
  static_cast<HttpServer*>(self)->Dispatch(request);
}

void HttpServer::WakeCallback(int, short, void* self) { static_cast<HttpServer*>(self)->OnWake(); }

void HttpServer::WatchCallback(int fd, short, void* arg) {
  auto& reply = *static_cast<HttpReply*>(arg);
  char byte = 0;
  const ssize_t peeked = recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  if (peeked > 0) {
    // The client sent more (a pipelined request): evhttp reads it after this reply; a close
    // is noticed once the reply starts.
    reply.server_->StopWatching(reply);
  } else if (peeked == 0 || (errno != EAGAIN && errno != EINTR)) {
    reply.server_->Gone(reply, /*drop_connection=*/true);
  }
}

void HttpServer::ConnectionClosed(evhttp_connection*, void* arg) {
  auto& reply = *static_cast<HttpReply*>(arg);
  reply.server_->Gone(reply, /*drop_connection=*/false);
}

void HttpServer::ReplyComplete(evhttp_request* request, void* arg) {
  auto& reply = *static_cast<HttpReply*>(arg);
  if (evhttp_connection* connection = evhttp_request_get_connection(request)) {
    const timeval read_timeout = ToTimeval(reply.server_->limits_.read_timeout);
    bufferevent_set_timeouts(evhttp_connection_get_bufferevent(connection), &read_timeout,
                             &read_timeout);
  }
  reply.server_->Finish(reply);
}

void HttpServer::AcceptError(evconnlistener* listener, void* http) {
  HttpServer* server = nullptr;
  {
    std::lock_guard lock(servers_mutex);
    server = servers.at(static_cast<evhttp*>(http));
  }
  server->OnAcceptError(listener);
}

void HttpServer::ResumeAccepting(int, short, void* self) {
  auto* server = static_cast<HttpServer*>(self);
  if (!server->accepting_) return;
  for (evconnlistener* listener : server->listeners_) evconnlistener_enable(listener);
}

void HttpServer::DrainCheck(int, short, void* self) {
  static_cast<HttpServer*>(self)->CheckDrained();
}

}  // namespace kite
