#include "base/half.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace kite {
namespace {

// Every F16 bit pattern converts to F32 and back unchanged (NaNs stay NaN).
TEST(Half, F16RoundTripsAllBitPatterns) {
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const float f = F16ToF32(static_cast<uint16_t>(bits));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(F16ToF32(F32ToF16(f))));
    } else {
      ASSERT_EQ(F32ToF16(f), bits) << "bits " << bits;
    }
  }
}

TEST(Half, F16KnownValues) {
  EXPECT_EQ(F16ToF32(0x3c00), 1.0f);
  EXPECT_EQ(F16ToF32(0xc000), -2.0f);
  EXPECT_EQ(F16ToF32(0x7bff), 65504.0f);
  EXPECT_EQ(F16ToF32(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
  EXPECT_EQ(F32ToF16(65520.0f), 0x7c00);                // rounds to inf
  EXPECT_EQ(F32ToF16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);  // tie -> even
  EXPECT_EQ(F32ToF16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);  // tie -> even (up)
  EXPECT_EQ(F32ToF16(std::ldexp(1.0f, -25)), 0x0000);   // exactly half the smallest: even
  EXPECT_EQ(F32ToF16(std::ldexp(1.5f, -25)), 0x0001);
}

TEST(Half, Bf16RoundsToNearestEven) {
  EXPECT_EQ(F32ToBf16(1.0f), 0x3f80);
  EXPECT_EQ(Bf16ToF32(0x3f80), 1.0f);
  EXPECT_EQ(F32ToBf16(std::bit_cast<float>(0x3f808000u)), 0x3f80);  // tie, even stays
  EXPECT_EQ(F32ToBf16(std::bit_cast<float>(0x3f818000u)), 0x3f82);  // tie, odd rounds up
  EXPECT_TRUE(std::isnan(Bf16ToF32(F32ToBf16(std::numeric_limits<float>::quiet_NaN()))));
}

}  // namespace
}  // namespace kite
