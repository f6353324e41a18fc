// The cpu backend's f16 row conversion against base/half.h's F32ToF16 (itself tested against
// the IEEE rounding in tensor/), bit for bit: ties both ways, subnormals, the overflow edge,
// infinities, NaNs with payloads, and random bit patterns, at lengths that leave a tail.
#include "backends/cpu/f16_rows.h"

#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "base/half.h"

namespace kite::cpu {
namespace {

void ExpectSameBits(const std::vector<float>& x) {
  std::vector<uint16_t> got(x.size(), 0xdead);
  F32ToF16Row(x.data(), got.data(), static_cast<int64_t>(x.size()));
  for (size_t i = 0; i < x.size(); ++i) {
    ASSERT_EQ(got[i], F32ToF16(x[i])) << "element " << i << " of " << x.size() << ", bits 0x"
                                      << std::hex << std::bit_cast<uint32_t>(x[i]);
  }
}

TEST(F16RowsTest, EdgeValuesRoundAsTheReference) {
  std::vector<float> x = {0.0f, -0.0f, 1.0f, -2.5f, 65504.0f, 65519.0f, 65520.0f, -65520.0f,
                          std::numeric_limits<float>::infinity(),
                          -std::numeric_limits<float>::infinity(),
                          std::numeric_limits<float>::denorm_min(), 5.96e-8f, 2.98e-8f, 2.99e-8f,
                          6.1e-5f, 6.09e-5f, -3.0e-6f, 1e-30f, 3e38f};
  // Ties to even around 1 (f16 step 2^-10) and in the subnormal range (step 2^-24).
  for (int m = 0; m < 8; ++m) {
    x.push_back(1.0f + (2 * m + 1) * 0x1p-11f);
    x.push_back((2 * m + 1) * 0x1p-25f);
  }
  // NaNs first, where every length's vectors (not only its scalar tail) read them.
  for (uint32_t nan : {0x7fc00000u, 0x7f800001u, 0xffc12345u, 0x7fbfffffu}) {
    x.insert(x.begin(), std::bit_cast<float>(nan));
  }
  for (size_t n = 1; n <= x.size(); ++n) {  // every length: whole vectors and every tail
    ExpectSameBits(std::vector<float>(x.begin(), x.begin() + static_cast<int64_t>(n)));
  }
}

TEST(F16RowsTest, RandomBitPatternsRoundAsTheReference) {
  std::mt19937 rng(11);
  std::vector<float> x(4099);
  for (float& v : x) v = std::bit_cast<float>(static_cast<uint32_t>(rng()));
  ExpectSameBits(x);
  // Values in the f16 range, where most of a cache's are.
  std::normal_distribution<float> normal(0.0f, 3.0f);
  for (float& v : x) v = normal(rng);
  ExpectSameBits(x);
}

}  // namespace
}  // namespace kite::cpu
