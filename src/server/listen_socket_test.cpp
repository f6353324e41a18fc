#include "server/listen_socket.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <vector>

#include "server/http_test_client.h"

namespace kite {
namespace {

using testing::RawClient;

class ListenSocketTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/kite-ls-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

TEST_F(ListenSocketTest, UnixSocketIsPrivateAndRemovedWhenClosed) {
  const std::string path = dir_ + "/kite.sock";
  {
    auto socket = ListenSocket::Unix(path);
    ASSERT_TRUE(socket) << socket.error().message;
    struct stat info {};
    ASSERT_EQ(::stat(path.c_str(), &info), 0);
    EXPECT_TRUE(S_ISSOCK(info.st_mode));
    EXPECT_EQ(info.st_mode & 0777, 0600u);
    EXPECT_EQ(socket->Describe(), "unix:" + path);
  }
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST_F(ListenSocketTest, StaleSocketFileIsReplaced) {
  const std::string path = dir_ + "/stale.sock";
  // A service that died: its socket file stays, nobody accepts on it.
  const int dead = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strcpy(address.sun_path, path.c_str());
  ASSERT_EQ(::bind(dead, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  ::close(dead);
  ASSERT_TRUE(std::filesystem::exists(path));
  auto socket = ListenSocket::Unix(path);
  ASSERT_TRUE(socket) << socket.error().message;
  EXPECT_TRUE(RawClient::Unix(path).connected());
}

TEST_F(ListenSocketTest, LiveSocketIsRefusedAndKept) {
  const std::string path = dir_ + "/live.sock";
  auto first = ListenSocket::Unix(path);
  ASSERT_TRUE(first);
  auto second = ListenSocket::Unix(path);
  ASSERT_FALSE(second);
  EXPECT_NE(second.error().message.find("another service is listening"), std::string::npos)
      << second.error().message;
  EXPECT_TRUE(RawClient::Unix(path).connected());  // the first one still answers
}

TEST_F(ListenSocketTest, PathThatIsNotASocketIsRefusedAndKept) {
  const std::string path = dir_ + "/notes.txt";
  std::ofstream(path) << "keep me";
  auto socket = ListenSocket::Unix(path);
  ASSERT_FALSE(socket);
  EXPECT_NE(socket.error().message.find("is not a socket"), std::string::npos);
  EXPECT_EQ(std::filesystem::file_size(path), 7u);
}

TEST_F(ListenSocketTest, TooLongPathIsRefused) {
  const std::string path = dir_ + "/" + std::string(120, 'x');
  auto socket = ListenSocket::Unix(path);
  ASSERT_FALSE(socket);
  EXPECT_NE(socket.error().message.find("1 to 107 bytes"), std::string::npos)
      << socket.error().message;
}

TEST_F(ListenSocketTest, BurstOfConnectsIsQueuedNotRefused) {
  // Nobody accepts: every connect waits in the backlog. With a backlog of 5 (cpp-httplib's)
  // connects past the sixth would fail with EAGAIN.
  const std::string path = dir_ + "/burst.sock";
  auto socket = ListenSocket::Unix(path);
  ASSERT_TRUE(socket);
  std::vector<RawClient> clients;
  for (int i = 0; i < 64; ++i) {
    clients.push_back(RawClient::Unix(path));
    EXPECT_TRUE(clients.back().connected()) << "connect " << i;
  }
}

TEST_F(ListenSocketTest, TcpOnLoopbackWithAnyPort) {
  auto socket = ListenSocket::Tcp("127.0.0.1", 0);
  ASSERT_TRUE(socket) << socket.error().message;
  EXPECT_NE(socket->port(), 0);
  EXPECT_EQ(socket->Describe(), "127.0.0.1:" + std::to_string(socket->port()));
  EXPECT_TRUE(RawClient::Tcp(socket->port()).connected());
  auto taken = ListenSocket::Tcp("127.0.0.1", socket->port());
  ASSERT_FALSE(taken);
  EXPECT_NE(taken.error().message.find("--port"), std::string::npos) << taken.error().message;
  EXPECT_FALSE(ListenSocket::Tcp("not an address", 0));
}

}  // namespace
}  // namespace kite
