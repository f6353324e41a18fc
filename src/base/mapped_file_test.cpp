#include "base/mapped_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace kite {
namespace {

// Resident pages of this process (/proc/self/statm, second field).
int64_t ResidentPages() {
  std::ifstream statm("/proc/self/statm");
  int64_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident;
}

class MappedFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = ::testing::TempDir() + "kite_mapped_file_" + std::to_string(::getpid());
    contents_.resize(kBytes);
    for (size_t i = 0; i < kBytes; ++i) contents_[i] = static_cast<char>(i * 7 + i / 4096);
    std::ofstream(path_, std::ios::binary).write(contents_.data(), kBytes);
  }
  void TearDown() override { std::remove(path_.c_str()); }

  static constexpr size_t kBytes = 64u << 20;
  std::string path_;
  std::vector<char> contents_;
};

TEST_F(MappedFileTest, MapsTheWholeFileReadOnly) {
  auto file = MappedFile::Open(path_);
  ASSERT_TRUE(file.has_value()) << file.error().message;
  ASSERT_EQ(file->size(), kBytes);
  EXPECT_EQ(std::memcmp(file->bytes().data(), contents_.data(), kBytes), 0);
  EXPECT_FALSE(MappedFile::Open(path_ + ".missing").has_value());
}

// Released pages leave the process's resident set and read back unchanged; only ranges inside a
// live map are released (a heap pointer, a range running past the map, a closed map: false).
TEST_F(MappedFileTest, ReleasedPagesLeaveMemoryAndReadBackUnchanged) {
  auto file = MappedFile::Open(path_);
  ASSERT_TRUE(file.has_value()) << file.error().message;
  const uint8_t* data = file->bytes().data();
  uint64_t sum = 0;
  for (size_t i = 0; i < kBytes; i += 4096) sum += data[i];  // fault every page in
  const int64_t page = ::sysconf(_SC_PAGESIZE);
  const int64_t touched = ResidentPages();

  ASSERT_TRUE(ReleaseFilePages(data + 100, kBytes - 200));
  const int64_t released = touched - ResidentPages();
  // Every whole page inside [100, size - 100): all but the first and the last.
  EXPECT_GE(released, static_cast<int64_t>(kBytes / page) - 2 - 64) << sum;
  EXPECT_EQ(std::memcmp(data, contents_.data(), kBytes), 0);

  EXPECT_FALSE(ReleaseFilePages(contents_.data(), kBytes));
  EXPECT_FALSE(ReleaseFilePages(data + 4096, kBytes));
  const uint8_t* closed = data;
  *file = MappedFile();
  EXPECT_FALSE(ReleaseFilePages(closed, 4096));
}

TEST_F(MappedFileTest, RefusesAFifoWithoutBlocking) {
  const std::string fifo = path_ + ".fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0666), 0);
  auto file = MappedFile::Open(fifo);
  ::unlink(fifo.c_str());
  ASSERT_FALSE(file.has_value());
  EXPECT_EQ(file.error().message, fifo + ": is a FIFO, expected a regular file");
}

// A file above the limit is refused from its size alone (a sparse 100 MB file is not read), naming
// the path, the size and the limit; a folder is an error, not an empty text.
TEST_F(MappedFileTest, ReadTextFileRefusesLargeFilesAndFolders) {
  auto text = ReadTextFile(path_, kBytes);
  ASSERT_TRUE(text.has_value()) << text.error().message;
  EXPECT_EQ(*text, std::string(contents_.begin(), contents_.end()));
  auto capped = ReadTextFile(path_, kBytes - 1);
  ASSERT_FALSE(capped.has_value());
  EXPECT_EQ(capped.error().message,
            path_ + ": 67108864 bytes, more than the 67108863 bytes (63 MiB) allowed for this "
                    "kind of file");

  const std::string sparse = path_ + ".json";
  ASSERT_EQ(::truncate(sparse.c_str(), 0), -1);  // absent
  std::ofstream(sparse).close();
  ASSERT_EQ(::truncate(sparse.c_str(), 100'000'000), 0);
  auto big = ReadTextFile(sparse, kConfigFileLimit);
  ::unlink(sparse.c_str());
  ASSERT_FALSE(big.has_value());
  EXPECT_EQ(big.error().code, ErrorCode::kOutOfResources);
  EXPECT_NE(big.error().message.find(sparse + ": 100000000 bytes, more than the 16777216 bytes"),
            std::string::npos)
      << big.error().message;

  // A file whose size says 0 (as /proc's do) is read to its end all the same.
  auto status = ReadTextFile("/proc/self/status", kConfigFileLimit);
  ASSERT_TRUE(status.has_value()) << status.error().message;
  EXPECT_NE(status->find("Pid:"), std::string::npos);

  auto folder = ReadTextFile(::testing::TempDir(), kConfigFileLimit);
  ASSERT_FALSE(folder.has_value());
  EXPECT_NE(folder.error().message.find("is a directory"), std::string::npos);
}

}  // namespace
}  // namespace kite
