#include "base/file_check.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace kite {
namespace {

namespace fs = std::filesystem;

class FileCheckTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = ::testing::TempDir() + "kite_file_check_XXXXXX";
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string dir_;
};

TEST_F(FileCheckTest, OpensARegularFileThroughALink) {
  const std::string path = dir_ + "/file.txt", link = dir_ + "/link.txt";
  std::ofstream(path) << "twelve bytes";
  ASSERT_EQ(::symlink(path.c_str(), link.c_str()), 0);
  for (const std::string& p : {path, link}) {
    auto file = RegularFile::Open(p);
    ASSERT_TRUE(file.has_value()) << file.error().message;
    EXPECT_EQ(file->size(), 12u);
    char buffer[16];
    EXPECT_EQ(::read(file->fd(), buffer, sizeof buffer), 12);
  }
}

// A FIFO without a writer would block a plain open forever; it is refused at once by kind, as are
// a folder and a device.
TEST_F(FileCheckTest, RefusesWhatIsNotARegularFileWithoutBlocking) {
  const std::string fifo = dir_ + "/fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0666), 0);
  for (const auto& [path, kind] : std::vector<std::pair<std::string, std::string>>{
           {fifo, "a FIFO"}, {dir_, "a directory"}, {"/dev/null", "a character device"}}) {
    auto file = RegularFile::Open(path);
    ASSERT_FALSE(file.has_value()) << path;
    EXPECT_EQ(file.error().message, path + ": is " + kind + ", expected a regular file");
  }
  auto missing = RegularFile::Open(dir_ + "/missing");
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);
  EXPECT_NE(missing.error().message.find(dir_ + "/missing"), std::string::npos);
}

}  // namespace
}  // namespace kite
