#include "server/http_server.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <future>
#include <thread>

#include "server/http_test_client.h"

namespace kite {
namespace {

using namespace std::chrono_literals;
using testing::GetRequest;
using testing::PostRequest;
using testing::RawClient;

class HttpServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/kite-http-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    server_.reset();
    tcp_.reset();
    unix_.reset();
    std::filesystem::remove_all(dir_);
  }
  // A server on a free loopback port and a Unix socket, with `routes` added before it starts.
  void Serve(const HttpLimits& limits, const std::function<void(HttpServer&)>& routes) {
    server_.reset();
    tcp_.reset();
    unix_.reset();
    auto server = HttpServer::Create(limits);
    ASSERT_TRUE(server) << server.error().message;
    server_ = std::move(*server);
    routes(*server_);
    auto tcp = ListenSocket::Tcp("127.0.0.1", 0);
    auto unix_socket = ListenSocket::Unix(dir_ + "/s.sock");
    ASSERT_TRUE(tcp && unix_socket);
    tcp_ = std::make_unique<ListenSocket>(std::move(*tcp));
    unix_ = std::make_unique<ListenSocket>(std::move(*unix_socket));
    ASSERT_TRUE(server_->Listen(*tcp_));
    ASSERT_TRUE(server_->Listen(*unix_));
    ASSERT_TRUE(server_->Start());
  }
  template <typename Predicate>
  static bool WaitFor(Predicate done, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!done()) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(2ms);
    }
    return true;
  }

  std::string dir_;
  std::unique_ptr<HttpServer> server_;
  std::unique_ptr<ListenSocket> tcp_, unix_;
};

HttpHandler Echo() {
  return [](const HttpRequest& request, std::shared_ptr<HttpReply> reply) {
    reply->Send({200, {{"Content-Type", "text/plain"}}, request.transport + " " + request.body});
  };
}

TEST_F(HttpServerTest, OneRouterOnTcpAndUnixSockets) {
  Serve({}, [](HttpServer& server) { server.Route("POST", "/echo", Echo()); });
  RawClient tcp = RawClient::Tcp(tcp_->port());
  ASSERT_TRUE(tcp.Send(PostRequest("/echo", "hello")));
  EXPECT_NE(tcp.Read("tcp hello").find("HTTP/1.1 200"), std::string::npos);
  RawClient unix_client = RawClient::Unix(unix_->path());
  ASSERT_TRUE(unix_client.Send(PostRequest("/echo", "hi")));
  EXPECT_NE(unix_client.Read("unix hi").find("unix hi"), std::string::npos);
}

TEST_F(HttpServerTest, UnknownPathIs404AndWrongMethodIs405WithAllow) {
  Serve({}, [](HttpServer& server) {
    server.Route("POST", "/echo", Echo());
    server.SetErrorPage([](int status, const std::string& message) {
      return HttpResponse{
          status, {{"Content-Type", "application/json"}}, "{\"m\":\"" + message + "\"}"};
    });
  });
  RawClient missing = RawClient::Tcp(tcp_->port());
  missing.Send(GetRequest("/nope"));
  const std::string not_found = missing.Read("}");
  EXPECT_NE(not_found.find("HTTP/1.1 404"), std::string::npos) << not_found;
  EXPECT_NE(not_found.find("no such endpoint: /nope"), std::string::npos);
  RawClient wrong = RawClient::Tcp(tcp_->port());
  wrong.Send(GetRequest("/echo"));
  const std::string not_allowed = wrong.Read("}");
  EXPECT_NE(not_allowed.find("HTTP/1.1 405"), std::string::npos) << not_allowed;
  EXPECT_NE(not_allowed.find("Allow: POST"), std::string::npos) << not_allowed;
}

TEST_F(HttpServerTest, TooLargeBodyGets413NotAReset) {
  Serve({.max_body_bytes = 1000},
        [](HttpServer& server) { server.Route("POST", "/echo", Echo()); });
  RawClient client = RawClient::Tcp(tcp_->port());
  ASSERT_TRUE(client.Send(PostRequest("/echo", std::string(200000, 'x'))));
  EXPECT_NE(client.Read("\r\n\r\n").find("HTTP/1.1 413"), std::string::npos);
}

TEST_F(HttpServerTest, TooLargeHeadersAreRefused) {
  Serve({.max_header_bytes = 1000},
        [](HttpServer& server) { server.Route("POST", "/echo", Echo()); });
  RawClient client = RawClient::Tcp(tcp_->port());
  client.Send("GET /echo HTTP/1.1\r\nX-Big: " + std::string(5000, 'y') + "\r\n\r\n");
  const std::string answer = client.Read("\r\n\r\n");
  EXPECT_TRUE(answer.find("HTTP/1.1 4") == 0 || client.closed_by_peer()) << answer;
  EXPECT_EQ(answer.find("HTTP/1.1 2"), std::string::npos);
}

// The handler never answers (a prompt being computed); the client leaves; the server must see
// it although it reads nothing from the socket then.
TEST_F(HttpServerTest, ClientLeavingBeforeTheFirstByteIsNoticed) {
  for (bool reset : {false, true}) {
    std::promise<void> left;
    std::shared_ptr<HttpReply> held;
    Serve({}, [&](HttpServer& server) {
      server.Route("POST", "/slow", [&](const HttpRequest&, std::shared_ptr<HttpReply> reply) {
        reply->OnGone([&] { left.set_value(); });
        held = reply;
      });
    });
    {
      RawClient client = RawClient::Unix(unix_->path());
      client.Send(PostRequest("/slow", "{}"));
      ASSERT_TRUE(WaitFor([&] { return server_->Stats().requests == 1; }, 2s));
      if (reset) client.Reset();
    }
    ASSERT_EQ(left.get_future().wait_for(1s), std::future_status::ready) << "reset " << reset;
    EXPECT_TRUE(held->gone());
    EXPECT_FALSE(held->Write("late"));
    EXPECT_EQ(server_->Stats().clients_gone, 1u);
    EXPECT_TRUE(WaitFor([&] { return server_->Stats().replies_open == 0; }, 1s));
    server_.reset();
  }
}

TEST_F(HttpServerTest, ClientLeavingMidStreamIsNoticed) {
  std::promise<void> left;
  std::atomic<bool> stop{false};
  std::thread writer;
  Serve({}, [&](HttpServer& server) {
    server.Route("GET", "/stream", [&](const HttpRequest&, std::shared_ptr<HttpReply> reply) {
      reply->OnGone([&] { left.set_value(); });
      reply->Start(200, {{"Content-Type", "text/event-stream"}});
      writer = std::thread([reply, &stop] {
        while (!stop && reply->Write("data: x\n\n")) std::this_thread::sleep_for(5ms);
      });
    });
  });
  {
    RawClient client = RawClient::Tcp(tcp_->port());
    client.Send(GetRequest("/stream"));
    EXPECT_NE(client.Read("data: x").find("Transfer-Encoding: chunked"), std::string::npos);
  }
  EXPECT_EQ(left.get_future().wait_for(1s), std::future_status::ready);
  stop = true;
  writer.join();
}

TEST_F(HttpServerTest, LongStreamOutlivesTheReadTimeout) {
  std::thread writer;
  Serve({.read_timeout = 200ms}, [&](HttpServer& server) {
    server.Route("GET", "/stream", [&](const HttpRequest&, std::shared_ptr<HttpReply> reply) {
      reply->Start(200, {{"Content-Type", "text/event-stream"}});
      writer = std::thread([reply] {
        for (int i = 0; i < 12; ++i) {
          reply->Write("data: " + std::to_string(i) + "\n\n");
          std::this_thread::sleep_for(50ms);
        }
        reply->Write("data: [DONE]\n\n");
        reply->End();
      });
    });
  });
  RawClient client = RawClient::Tcp(tcp_->port());
  client.Send(GetRequest("/stream"));
  const std::string stream = client.Read("0\r\n\r\n", 3s);
  writer.join();
  EXPECT_NE(stream.find("data: [DONE]"), std::string::npos) << stream;
  // The read timeout is back for the idle keep-alive connection afterwards.
  client.Read("never", 1s);
  EXPECT_TRUE(client.closed_by_peer());
}

TEST_F(HttpServerTest, UnreadOutputIsBounded) {
  std::promise<void> left;
  std::atomic<int64_t> queued{0};
  std::thread writer;
  Serve({.max_unread_bytes = 256 << 10}, [&](HttpServer& server) {
    server.Route("GET", "/flood", [&](const HttpRequest&, std::shared_ptr<HttpReply> reply) {
      reply->OnGone([&] { left.set_value(); });
      reply->Start(200, {{"Content-Type", "text/event-stream"}});
      writer = std::thread([reply, &queued] {
        const std::string block(64 << 10, 'z');
        while (reply->Write(block) && queued < (int64_t{1} << 30)) {
          queued += block.size();
          std::this_thread::sleep_for(1ms);
        }
      });
    });
  });
  RawClient client = RawClient::Tcp(tcp_->port());  // sends, then never reads
  client.Send(GetRequest("/flood"));
  EXPECT_EQ(left.get_future().wait_for(5s), std::future_status::ready);
  writer.join();
  EXPECT_EQ(server_->Stats().unread_drops, 1u);
  EXPECT_LT(queued.load(), int64_t{64} << 20);  // socket buffers + the bound, not everything
}

// Stop: a reply its handler ended is still written whole (within the drain time); one still
// open is made gone; nothing new is served.
TEST_F(HttpServerTest, StopEndsOpenRepliesAndFlushesEndedOnes) {
  std::promise<void> left;
  std::shared_ptr<HttpReply> waiting;
  const std::string big(4 << 20, 'b');  // more than the socket buffers hold
  Serve({.max_unread_bytes = 16u << 20}, [&](HttpServer& server) {
    server.Route("GET", "/wait", [&](const HttpRequest&, std::shared_ptr<HttpReply> reply) {
      reply->OnGone([&] { left.set_value(); });
      waiting = reply;
    });
    server.Route("GET", "/big", [&](const HttpRequest&, std::shared_ptr<HttpReply> reply) {
      reply->Send({200, {{"Content-Type", "text/plain"}}, big});
    });
  });
  RawClient open = RawClient::Unix(unix_->path());
  open.Send(GetRequest("/wait"));
  RawClient slow = RawClient::Unix(unix_->path());  // reads only once Stop has begun
  slow.Send(GetRequest("/big"));
  ASSERT_TRUE(WaitFor([&] { return server_->Stats().requests == 2; }, 2s));
  std::thread stop([&] { server_->Stop(2s); });
  std::this_thread::sleep_for(50ms);
  const std::string answer = slow.Read(big, 3s);
  stop.join();
  EXPECT_GE(answer.size(), big.size());
  EXPECT_EQ(left.get_future().wait_for(0s), std::future_status::ready);
  RawClient late = RawClient::Unix(unix_->path());
  late.Send(GetRequest("/wait"));
  EXPECT_EQ(late.Read("HTTP", 200ms).find("HTTP"), std::string::npos);
}

// Stop's drain gives up on a whole reply its client never reads: the reply is dropped, and
// the connection evhttp frees later must not call back into it (its close callback named the
// freed reply, and ASan caught evhttp_free calling it as the server was destroyed).
TEST_F(HttpServerTest, StopDropsAWholeReplyItsClientNeverReads) {
  const std::string big(4 << 20, 'b');  // more than the socket buffers hold
  Serve({.max_unread_bytes = 16u << 20}, [&](HttpServer& server) {
    server.Route("GET", "/big", [&](const HttpRequest&, std::shared_ptr<HttpReply> reply) {
      reply->Send({200, {{"Content-Type", "text/plain"}}, big});
    });
  });
  RawClient stuck = RawClient::Unix(unix_->path());  // sends, then never reads
  stuck.Send(GetRequest("/big"));
  ASSERT_TRUE(WaitFor([&] { return server_->Stats().requests == 1; }, 2s));
  std::this_thread::sleep_for(50ms);  // the reply is handed to evhttp and stuck writing
  server_->Stop(100ms);
  EXPECT_EQ(server_->Stats().replies_open, 0);
  EXPECT_EQ(server_->Stats().clients_gone, 0u);  // its handler had ended it
  server_.reset();
}

// Out of descriptors, accept() fails at once for as long as a connection waits: the listener
// must rest instead of spinning, and serve the waiting client once descriptors are free.
TEST_F(HttpServerTest, AcceptDoesNotSpinWithoutDescriptors) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "sanitizers need descriptors of their own";
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
  GTEST_SKIP() << "sanitizers need descriptors of their own";
#endif
#endif
  Serve({}, [](HttpServer& server) { server.Route("POST", "/echo", Echo()); });
  // The client's socket is made first; it connects once no descriptor is left.
  const int client = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(client, 0);
  rlimit limit{};
  getrlimit(RLIMIT_NOFILE, &limit);
  const rlim_t saved = limit.rlim_cur;
  limit.rlim_cur = 256;
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &limit), 0);
  std::vector<int> hogs;
  for (int fd; (fd = ::dup(0)) >= 0;) hogs.push_back(fd);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(tcp_->port());
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool connected =
      ::connect(client, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0;
  const std::string request = PostRequest("/echo", "late");
  ::send(client, request.data(), request.size(), MSG_NOSIGNAL);
  std::this_thread::sleep_for(300ms);
  const uint64_t pauses = server_->Stats().accept_pauses;
  for (int fd : hogs) ::close(fd);
  limit.rlim_cur = saved;
  setrlimit(RLIMIT_NOFILE, &limit);
  ASSERT_TRUE(connected);  // it waits in the backlog
  EXPECT_GE(pauses, 1u);
  EXPECT_LE(pauses, 5u);  // one per kAcceptPause, not thousands
  std::string answer;
  char buffer[4096];
  pollfd ready{client, POLLIN, 0};
  while (answer.find("tcp late") == std::string::npos && ::poll(&ready, 1, 2000) > 0) {
    const ssize_t n = ::recv(client, buffer, sizeof(buffer), 0);
    if (n <= 0) break;
    answer.append(buffer, static_cast<size_t>(n));
  }
  ::close(client);
  EXPECT_NE(answer.find("tcp late"), std::string::npos) << answer;
}

}  // namespace
}  // namespace kite
