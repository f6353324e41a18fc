// `kite run --server` and `kite chat --server` end to end against a fake server: a socket in this
// process that records each request and answers with a canned OpenAI stream, written from
// OpenAI's API reference (chunk objects, the usage chunk, [DONE], the error envelope), a few
// bytes at a time so that events arrive split across reads. The real `kite serve` is tested on
// its own; here only the client is.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "cli_runner.h"

namespace kite::testing {
namespace {

using nlohmann::json;

struct Request {
  std::string head;  // request line and headers
  json body;
};

// A TCP socket bound to a free port of 127.0.0.1; *url is where it is.
int BindLoopback(std::string* url) {
  const int socket = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::bind(socket, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  socklen_t length = sizeof(address);
  ::getsockname(socket, reinterpret_cast<sockaddr*>(&address), &length);
  *url = "http://127.0.0.1:" + std::to_string(ntohs(address.sin_port));
  return socket;
}

// Serves one canned answer per connection, in order, on a Unix socket or on 127.0.0.1.
class FakeServer {
 public:
  FakeServer(bool unix_socket, std::vector<std::string> answers, size_t piece = 7)
      : answers_(std::move(answers)), piece_(piece) {
    if (unix_socket) {
      path_ = (std::filesystem::temp_directory_path() /
               ("kite_fake_" + std::to_string(::getpid()) + "_" + std::to_string(counter_++) + ".sock"))
                  .string();
      ::unlink(path_.c_str());
      listener_ = ::socket(AF_UNIX, SOCK_STREAM, 0);
      sockaddr_un address{};
      address.sun_family = AF_UNIX;
      std::strncpy(address.sun_path, path_.c_str(), sizeof(address.sun_path) - 1);
      EXPECT_EQ(::bind(listener_, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
      name_ = "unix:" + path_;
    } else {
      listener_ = BindLoopback(&name_);
    }
    EXPECT_EQ(::listen(listener_, 8), 0);
    thread_ = std::thread([this] { Serve(); });
  }
  ~FakeServer() {
    ::shutdown(listener_, SHUT_RDWR);  // ends a pending accept
    ::close(listener_);
    thread_.join();
    if (!path_.empty()) ::unlink(path_.c_str());
  }

  const std::string& name() const { return name_; }  // what --server takes
  std::vector<Request> requests() {
    std::lock_guard lock(mutex_);
    return requests_;
  }

 private:
  void Serve() {
    for (const std::string& answer : answers_) {
      const int client = ::accept(listener_, nullptr, nullptr);
      if (client < 0) return;
      Record(client);
      for (size_t at = 0; at < answer.size(); at += piece_) {
        const std::string_view part = std::string_view(answer).substr(at, piece_);
        if (::send(client, part.data(), part.size(), MSG_NOSIGNAL) < 0) break;
        std::this_thread::sleep_for(std::chrono::microseconds(200));  // separate reads
      }
      ::close(client);
    }
  }

  // Reads the request: headers, then Content-Length bytes of body.
  void Record(int client) {
    std::string data;
    char buffer[4096];
    size_t header_end = std::string::npos;
    size_t wanted = 0;
    while (true) {
      const ssize_t got = ::recv(client, buffer, sizeof(buffer), 0);
      if (got <= 0) break;
      data.append(buffer, got);
      if (header_end == std::string::npos && (header_end = data.find("\r\n\r\n")) != std::string::npos) {
        const size_t at = data.find("Content-Length: ");
        wanted = at == std::string::npos ? 0 : std::stoul(data.substr(at + 16));
      }
      if (header_end != std::string::npos && data.size() >= header_end + 4 + wanted) break;
    }
    Request request;
    request.head = data.substr(0, header_end);
    request.body = json::parse(data.substr(header_end == std::string::npos ? data.size() : header_end + 4),
                               nullptr, false);
    std::lock_guard lock(mutex_);
    requests_.push_back(std::move(request));
  }

  static inline int counter_ = 0;
  std::vector<std::string> answers_;
  size_t piece_;
  std::string path_, name_;
  int listener_ = -1;
  std::thread thread_;
  std::mutex mutex_;
  std::vector<Request> requests_;
};

// An event stream answer: each chunk as a `data:` event, then [DONE].
std::string Stream(const std::vector<json>& chunks) {
  std::string answer =
      "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
      "Connection: close\r\n\r\n";
  for (const json& chunk : chunks) answer += "data: " + chunk.dump() + "\n\n";
  return answer + "data: [DONE]\n\n";
}

json CompletionChunk(const std::string& text, const json& finish_reason = nullptr) {
  return {{"id", "cmpl-7"}, {"object", "text_completion"}, {"created", 1700000000},
          {"model", "demo"}, {"system_fingerprint", nullptr},
          {"choices", {{{"index", 0}, {"text", text}, {"logprobs", nullptr}, {"finish_reason", finish_reason}}}}};
}

json ChatChunk(const json& delta, const json& finish_reason = nullptr) {
  return {{"id", "chatcmpl-7"}, {"object", "chat.completion.chunk"}, {"created", 1700000000},
          {"model", "demo"}, {"system_fingerprint", nullptr},
          {"choices", {{{"index", 0}, {"delta", delta}, {"logprobs", nullptr}, {"finish_reason", finish_reason}}}}};
}

json UsageChunk(int prompt, int completion) {
  return {{"id", "cmpl-7"}, {"object", "text_completion"}, {"created", 1700000000}, {"model", "demo"},
          {"choices", json::array()},
          {"usage", {{"prompt_tokens", prompt}, {"completion_tokens", completion}, {"total_tokens", prompt + completion}}}};
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(ServerClient, RunStreamsACompletionOverAUnixSocket) {
  FakeServer server(/*unix_socket=*/true,
                    {Stream({CompletionChunk(" there"), CompletionChunk(" was a"),
                             CompletionChunk(" caf\xC3\xA9", "length"), UsageChunk(5, 3)})},
                    /*piece=*/3);
  const CommandResult result = RunKite({"run", "--server", server.name(), "-p", "Once upon a time",
                                        "-n", "3", "--temp", "0", "--top-k", "5", "--stop", "END"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out, " there was a caf\xC3\xA9\n");
  EXPECT_TRUE(Contains(result.err, "prompt 5 tokens")) << result.err;
  EXPECT_TRUE(Contains(result.err, "generated 3 tokens")) << result.err;
  EXPECT_TRUE(Contains(result.err, "stop: length")) << result.err;

  const std::vector<Request> requests = server.requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_TRUE(requests[0].head.starts_with("POST /v1/completions HTTP/1.1")) << requests[0].head;
  EXPECT_TRUE(Contains(requests[0].head, "Accept: text/event-stream"));
  EXPECT_FALSE(Contains(requests[0].head, "Authorization"));
  const json& body = requests[0].body;
  EXPECT_EQ(body["prompt"], "Once upon a time");
  EXPECT_EQ(body["stream"], true);
  EXPECT_EQ(body["stream_options"]["include_usage"], true);
  EXPECT_EQ(body["max_tokens"], 3);
  EXPECT_EQ(body["temperature"], 0.0);
  EXPECT_EQ(body["top_k"], 5);
  EXPECT_EQ(body["stop"], json::array({"END"}));
  EXPECT_FALSE(body.contains("model"));  // no -m: the server's model
}

TEST(ServerClient, RunJsonCollectsTheText) {
  FakeServer server(/*unix_socket=*/false,
                    {Stream({ChatChunk({{"role", "assistant"}, {"content", ""}}), ChatChunk({{"content", "Hi!"}}),
                             ChatChunk(json::object(), "stop"), UsageChunk(9, 2)})});
  const CommandResult result = RunKite({"run", "--server", server.name(), "--chat", "--system", "Be brief.",
                                        "-p", "Hello", "--json", "--api-key", "s3cret"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const json out = json::parse(result.out);
  EXPECT_EQ(out["text"], "Hi!");
  EXPECT_EQ(out["finish_reason"], "stop");
  EXPECT_EQ(out["stats"]["prompt_tokens"], 9);
  const std::vector<Request> requests = server.requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_TRUE(requests[0].head.starts_with("POST /v1/chat/completions HTTP/1.1"));
  EXPECT_TRUE(Contains(requests[0].head, "Authorization: Bearer s3cret"));
  EXPECT_EQ(requests[0].body["messages"],
            json::parse(R"([{"role":"system","content":"Be brief."},{"role":"user","content":"Hello"}])"));
}

TEST(ServerClient, ChatSendsTheWholeConversationEachTurn) {
  FakeServer server(/*unix_socket=*/true,
                    {Stream({ChatChunk({{"role", "assistant"}, {"content", ""}}),
                             ChatChunk({{"content", "Hello"}}), ChatChunk({{"content", " there."}}),
                             ChatChunk(json::object(), "stop")}),
                     Stream({ChatChunk({{"role", "assistant"}, {"content", ""}}),
                             ChatChunk({{"content", "Fine."}}), ChatChunk(json::object(), "stop")})},
                    /*piece=*/1);
  const CommandResult result = RunKite({"chat", "--server", server.name(), "-n", "16"},
                                       "Hi\n/save x.bin\nHow are you?\n");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out, "Hello there.\nFine.\n");
  EXPECT_TRUE(Contains(result.err, "/save needs a local model")) << result.err;
  const std::vector<Request> requests = server.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].body["messages"], json::parse(R"([{"role":"user","content":"Hi"}])"));
  EXPECT_EQ(requests[1].body["messages"],
            json::parse(R"([{"role":"user","content":"Hi"},{"role":"assistant","content":"Hello there."},
                            {"role":"user","content":"How are you?"}])"));
  EXPECT_EQ(requests[1].body["max_tokens"], 16);
}

TEST(ServerClient, ShowsTheServersErrorMessage) {
  const std::string envelope =
      R"({"error":{"message":"'temperature' must be in [0, 2]","type":"invalid_request_error","param":"temperature","code":null}})";
  FakeServer server(/*unix_socket=*/false,
                    {"HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: " +
                     std::to_string(envelope.size()) + "\r\nConnection: close\r\n\r\n" + envelope});
  const CommandResult result = RunKite({"run", "--server", server.name(), "-p", "Hi"});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_TRUE(Contains(result.err, "answered HTTP 400: 'temperature' must be in [0, 2]")) << result.err;
  EXPECT_TRUE(Contains(result.err, server.name())) << result.err;
}

TEST(ServerClient, ShowsAnErrorEventInTheStream) {
  // The server gave up mid-stream (OpenAI's envelope as an event, then [DONE]).
  FakeServer server(/*unix_socket=*/true,
                    {Stream({CompletionChunk(" Once"),
                             json::parse(R"({"error":{"message":"the server is shutting down","type":"server_error"}})")})});
  const CommandResult result = RunKite({"run", "--server", server.name(), "-p", "Hi"});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(result.out, " Once");
  EXPECT_TRUE(Contains(result.err, "the server stopped with an error: the server is shutting down")) << result.err;
}

TEST(ServerClient, ShowsAStreamCutShort) {
  FakeServer server(/*unix_socket=*/true,
                    {"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n"
                     "data: " + CompletionChunk(" Once").dump() + "\n\n"});
  const CommandResult result = RunKite({"run", "--server", server.name(), "-p", "Hi"});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_TRUE(Contains(result.err, "ended the stream before [DONE]")) << result.err;
}

TEST(ServerClient, ConnectionRefusedNamesTheServer) {
  // A port nobody listens on: bound, then closed.
  std::string url;
  ::close(BindLoopback(&url));
  CommandResult result = RunKite({"run", "--server", url, "-p", "Hi"});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_TRUE(Contains(result.err, "cannot connect to " + url + " (POST /v1/completions): Connection refused"))
      << result.err;

  result = RunKite({"chat", "--server", "unix:/nonexistent/kite.sock"}, "Hi\n");
  EXPECT_TRUE(Contains(result.err, "cannot connect to unix:/nonexistent/kite.sock (POST /v1/chat/completions): No such file"))
      << result.err;

  result = RunKite({"run", "--server", "ftp://example.org", "-p", "Hi"});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_TRUE(Contains(result.err, "--server ftp://example.org: expected http://HOST:PORT")) << result.err;
}

}  // namespace
}  // namespace kite::testing
