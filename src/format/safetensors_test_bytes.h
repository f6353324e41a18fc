// Test helpers: safetensors files laid out byte by byte from the format's description (8-byte
// little-endian header length, JSON header text, data buffer), independent of the reader.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace kite::testing {

inline std::vector<uint8_t> SafetensorsBytes(std::string_view header,
                                             const std::vector<uint8_t>& data = {}) {
  std::vector<uint8_t> bytes;
  const uint64_t length = header.size();
  for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<uint8_t>(length >> (8 * i)));
  bytes.insert(bytes.end(), header.begin(), header.end());
  bytes.insert(bytes.end(), data.begin(), data.end());
  return bytes;
}

inline void WriteBytes(const std::filesystem::path& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << path;
}

inline void WriteText(const std::filesystem::path& path, std::string_view text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  ASSERT_TRUE(out.good()) << path;
}

// Asserts that `result` failed with `code` and a message holding each fragment.
template <typename T>
void ExpectError(const Result<T>& result, ErrorCode code,
                 std::initializer_list<std::string_view> fragments) {
  ASSERT_FALSE(result.has_value());
  EXPECT_EQ(result.error().code, code) << result.error().message;
  for (std::string_view fragment : fragments) {
    EXPECT_NE(result.error().message.find(fragment), std::string::npos)
        << "message \"" << result.error().message << "\" lacks \"" << fragment << "\"";
  }
}

// A fresh empty folder under the test temp dir, removed with the object.
class TempFolder {
 public:
  explicit TempFolder(std::string_view name)
      : path_(std::filesystem::path(::testing::TempDir()) /
              ("kite_" + std::string(name) + "_" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempFolder() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(std::string_view name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

}  // namespace kite::testing
