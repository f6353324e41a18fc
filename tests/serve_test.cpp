// `kite serve` end to end, as a separate process driven over libcurl: both transports, the
// Unix socket's rules, --help, and SIGTERM in the middle of a stream.
#include <curl/curl.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "cli_runner.h"

namespace kite {
namespace {

using namespace std::chrono_literals;
using Json = nlohmann::json;

// A running `kite serve` on a free port and a Unix socket in a fresh folder.
class ServeProcess {
 public:
  explicit ServeProcess(std::vector<std::string> extra = {}) {
    char pattern[] = "/tmp/kite-serve-XXXXXX";
    dir_ = ::mkdtemp(pattern);
    socket_ = dir_ + "/kite.sock";
    err_path_ = dir_ + "/stderr";
    std::vector<std::string> args = {"serve",  "-m",         testing::SourcePath("models/demo"),
                                     "--port", "0",          "--unix",
                                     socket_,  "--parallel", "2",
                                     "--ctx",  "4096",       "-t",
                                     "2"};
    args.insert(args.end(), extra.begin(), extra.end());
    pid_ = ::fork();
    if (pid_ == 0) {
      const int err = ::open(err_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      ::dup2(err, 2);
      testing::ExecProgram(KITE_BINARY, args);
    }
  }
  ~ServeProcess() {
    if (pid_ > 0 && !exited_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    std::filesystem::remove_all(dir_);
  }
  // Waits for "ready" in its stderr; the port it printed.
  int WaitReady() {
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (std::chrono::steady_clock::now() < deadline) {
      const std::string err = Stderr();
      std::smatch port;
      if (err.find("kite serve: ready") != std::string::npos &&
          std::regex_search(err, port, std::regex("listening on 127\\.0\\.0\\.1:(\\d+)"))) {
        return std::stoi(port[1]);
      }
      std::this_thread::sleep_for(20ms);
    }
    ADD_FAILURE() << "not ready: " << Stderr();
    return 0;
  }
  std::string Stderr() const {
    std::ifstream file(err_path_);
    return std::string(std::istreambuf_iterator<char>(file), {});
  }
  // Sends SIGTERM; the exit status and the seconds until exit.
  std::pair<int, double> Terminate() {
    const auto start = std::chrono::steady_clock::now();
    ::kill(pid_, SIGTERM);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    exited_ = true;
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1,
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()};
  }
  const std::string& socket() const { return socket_; }

 private:
  std::string dir_, socket_, err_path_;
  pid_t pid_ = -1;
  bool exited_ = false;
};

size_t Collect(char* data, size_t size, size_t count, void* out) {
  static_cast<std::string*>(out)->append(data, size * count);
  return size * count;
}

struct CurlAnswer {
  long status = 0;
  std::string body;
};

// POST `body` to `url` (over `unix_socket` when not empty).
CurlAnswer Post(const std::string& url, const std::string& body,
                const std::string& unix_socket = "") {
  CURL* curl = curl_easy_init();
  CurlAnswer answer;
  curl_slist* headers = curl_slist_append(nullptr, "Content-Type: application/json");
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.c_str());
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, Collect);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &answer.body);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT, 30L);
  if (!unix_socket.empty()) curl_easy_setopt(curl, CURLOPT_UNIX_SOCKET_PATH, unix_socket.c_str());
  curl_easy_perform(curl);
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &answer.status);
  curl_slist_free_all(headers);
  curl_easy_cleanup(curl);
  return answer;
}

std::string Get(const std::string& url, const std::string& unix_socket) {
  CURL* curl = curl_easy_init();
  std::string body;
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, Collect);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &body);
  curl_easy_setopt(curl, CURLOPT_UNIX_SOCKET_PATH, unix_socket.c_str());
  curl_easy_perform(curl);
  curl_easy_cleanup(curl);
  return body;
}

const std::string kChat =
    R"({"model": "demo", "messages": [{"role": "user", "content": "A fortune"}],
  "temperature": 0, "max_tokens": 16})";

TEST(ServeTest, ChatOverTcpAndTheUnixSocketAlike) {
  ServeProcess serve;
  const int port = serve.WaitReady();
  ASSERT_GT(port, 0);
  const CurlAnswer tcp =
      Post("http://127.0.0.1:" + std::to_string(port) + "/v1/chat/completions", kChat);
  const CurlAnswer unix_socket =
      Post("http://localhost/v1/chat/completions", kChat, serve.socket());
  ASSERT_EQ(tcp.status, 200) << tcp.body;
  ASSERT_EQ(unix_socket.status, 200) << unix_socket.body;
  EXPECT_EQ(Json::parse(tcp.body)["choices"][0]["message"]["content"],
            Json::parse(unix_socket.body)["choices"][0]["message"]["content"]);
  EXPECT_EQ(std::filesystem::status(serve.socket()).permissions() & std::filesystem::perms::all,
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);

  // A second service on the same socket is refused, and the first one keeps it.
  const testing::CommandResult second = testing::RunKite(
      {"serve", "-m", testing::SourcePath("models/demo"), "--port", "0", "--unix", serve.socket()});
  EXPECT_EQ(second.exit_code, 1);
  EXPECT_NE(second.err.find("another service is listening on it"), std::string::npos) << second.err;
  EXPECT_EQ(Post("http://localhost/v1/chat/completions", kChat, serve.socket()).status, 200);
}

// SIGTERM in the middle of a stream: the stream ends with an error event and [DONE], the
// process exits 0 within 5 s and removes its socket file.
TEST(ServeTest, SigtermMidStreamEndsTheStreamAndExitsCleanly) {
  ServeProcess serve;
  ASSERT_GT(serve.WaitReady(), 0);
  CurlAnswer answer;
  std::thread client([&] {
    answer = Post(
        "http://localhost/v1/chat/completions",
        R"({"messages": [{"role": "user", "content": "x"}], "max_tokens": 100000, "stream": true, "ignore_eos": true,
                      "temperature": 0})",
        serve.socket());
  });
  // Stopped while it generates (the context holds thousands of tokens: it is still going).
  while (Get("http://localhost/status", serve.socket()).find("\"active\":1") == std::string::npos) {
    std::this_thread::sleep_for(1ms);
  }
  std::this_thread::sleep_for(50ms);
  const auto [code, seconds] = serve.Terminate();
  client.join();
  EXPECT_EQ(code, 0) << serve.Stderr();
  EXPECT_LT(seconds, 5.0);
  EXPECT_FALSE(std::filesystem::exists(serve.socket()));
  ASSERT_EQ(answer.status, 200);
  const size_t done = answer.body.rfind("data: [DONE]\n\n");
  ASSERT_NE(done, std::string::npos)
      << answer.body.substr(answer.body.size() > 300 ? answer.body.size() - 300 : 0);
  EXPECT_EQ(done + 14, answer.body.size());
  const size_t error = answer.body.rfind("data: {\"error\"");
  ASSERT_NE(error, std::string::npos);
  EXPECT_LT(error, done);
}

TEST(ServeTest, HelpNamesEveryFlagAndABadModelExits1) {
  const testing::CommandResult help = testing::RunKite({"serve", "--help"});
  EXPECT_EQ(help.exit_code, 0);
  for (const char* flag :
       {"-m", "--host", "--port", "--unix", "--parallel", "--ctx", "--api-key", "--max-queue",
        "--config", "--request-timeout", "--max-body", "/v1/chat/completions", "/metrics"}) {
    EXPECT_NE(help.out.find(flag), std::string::npos) << flag;
  }
  // A model that cannot be loaded: exit 1 with the loader's message, the socket file gone.
  const std::string socket = "/tmp/kite-serve-missing-" + std::to_string(::getpid()) + ".sock";
  const testing::CommandResult missing =
      testing::RunKite({"serve", "-m", "/nonexistent/model.gguf", "--port", "0", "--unix", socket});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("/nonexistent/model.gguf"), std::string::npos) << missing.err;
  EXPECT_FALSE(std::filesystem::exists(socket));
}

}  // namespace
}  // namespace kite
