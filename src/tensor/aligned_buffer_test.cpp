#include "tensor/aligned_buffer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>

namespace kite {
namespace {

// Whether every byte of `buffer` is zero.
bool AllZero(const AlignedBuffer& buffer) {
  return std::all_of(buffer.data(), buffer.data() + buffer.size(),
                     [](std::byte b) { return b == std::byte{0}; });
}

// Below and past the size from which buffers are mappings: both zero-filled, aligned and
// writable to their last byte.
TEST(AlignedBufferTest, SmallAndMappedBuffersAreZeroAlignedAndWritable) {
  for (const uint64_t bytes : {uint64_t{1}, uint64_t{4096} + 3, AlignedBuffer::kMappedBytes - 1,
                               AlignedBuffer::kMappedBytes, 3 * AlignedBuffer::kMappedBytes + 5}) {
    auto allocated = AlignedBuffer::Allocate(bytes);
    ASSERT_TRUE(allocated.has_value()) << bytes;
    AlignedBuffer buffer = std::move(*allocated);
    ASSERT_EQ(buffer.size(), bytes);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(buffer.data()) % AlignedBuffer::kAlignment, 0u) << bytes;
    EXPECT_TRUE(AllZero(buffer)) << bytes;
    buffer.data()[0] = std::byte{1};
    buffer.data()[bytes - 1] = std::byte{2};
    EXPECT_EQ(buffer.data()[bytes - 1], std::byte{2});
  }
}

TEST(AlignedBufferTest, ZeroBytesIsNull) {
  const AlignedBuffer buffer = *AlignedBuffer::Allocate(0);
  EXPECT_EQ(buffer.data(), nullptr);
  EXPECT_EQ(buffer.size(), 0u);
}

TEST(AlignedBufferTest, MoreThanTheAddressSpaceIsOutOfResources) {
  if (!AlignedBuffer::kMapsLarge) {
    GTEST_SKIP() << "AddressSanitizer aborts on a heap allocation past its maximum";
  }
  const auto buffer = AlignedBuffer::Allocate(uint64_t{1} << 62);
  ASSERT_FALSE(buffer.has_value());
  EXPECT_EQ(buffer.error().code, ErrorCode::kOutOfResources);
  EXPECT_NE(buffer.error().message.find("4611686018427387904 bytes"), std::string::npos)
      << buffer.error().message;
}

}  // namespace
}  // namespace kite
