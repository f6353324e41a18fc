// Quantize: hand-worked blocks for ggml's rounding conventions, the scale packers, and bad calls.
// Round trips are in quantize_roundtrip_test.cpp.
#include "tensor/quantize.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "tensor/dequantize.h"
#include "tensor/quant_blocks.h"

namespace kite {
namespace {

std::vector<uint8_t> QuantizeOk(DType dtype, const std::vector<float>& x) {
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<uint8_t> bytes(*BytesFor(dtype, n), 0xcd);
  const Status status = Quantize(dtype, x.data(), bytes.data(), n);
  EXPECT_TRUE(status.has_value()) << status.error().message;
  return bytes;
}

// --- ggml's rounding, worked by hand ------------------------------------------------------------

// q8_0: d = amax/127, codes roundf(x/d): halves round away from zero.
TEST(QuantizeTest, Q8_0MatchesGgmlRounding) {
  std::vector<float> x(32, 0.0f);
  x[0] = 127.0f;  // amax 127: d = 1 exactly
  x[1] = 2.5f;    // 3, not 2 (ties away from zero)
  x[2] = -2.5f;   // -3
  x[3] = 0.49f;   // 0
  x[4] = -127.0f;
  x[5] = 1.5f;  // 2
  const std::vector<uint8_t> b = QuantizeOk(DType::kQ8_0, x);
  std::vector<uint8_t> expected(34, 0);
  expected[0] = 0x00;  // d = F16 1.0 = 0x3c00, little-endian
  expected[1] = 0x3c;
  expected[2] = 127;
  expected[3] = 3;
  expected[4] = static_cast<uint8_t>(-3);
  expected[5] = 0;
  expected[6] = static_cast<uint8_t>(-127);
  expected[7] = 2;
  EXPECT_EQ(b, expected);
}

// q4_0: d = max/-8 where max is the element of largest magnitude (with its sign), codes
// trunc(x/d + 8.5) capped at 15: halves round up, +8 steps clips to 15.
TEST(QuantizeTest, Q4_0MatchesGgmlRounding) {
  std::vector<float> x(32, 0.0f);
  x[0] = -8.0f;   // max = -8: d = 1; code trunc(0.5) = 0
  x[1] = 0.5f;    // trunc(9.0) = 9
  x[2] = -0.5f;   // trunc(8.0) = 8: -0.5 rounds up to 0
  x[3] = 7.6f;    // trunc(16.1) = 16, capped at 15
  x[16] = 3.49f;  // trunc(11.99) = 11
  x[17] = -7.5f;  // trunc(1.0) = 1
  const std::vector<uint8_t> b = QuantizeOk(DType::kQ4_0, x);
  std::vector<uint8_t> expected(18, 0x88);  // zeros: code 8 in both nibbles
  expected[0] = 0x00;
  expected[1] = 0x3c;  // d = 1.0
  expected[2] = 0xb0;  // x0 = 0 (low), x16 = 11 (high)
  expected[3] = 0x19;  // x1 = 9, x17 = 1
  expected[4] = 0x88;  // x2 = 8, x18 = 8
  expected[5] = 0x8f;  // x3 = 15, x19 = 8
  EXPECT_EQ(b, expected);

  // A positive extreme gives a negative d: 8 -> d = -1, code 0.
  std::vector<float> positive(32, 0.0f);
  positive[0] = 8.0f;
  positive[1] = -2.0f;  // -2 / -1 + 8.5 = 10.5 -> 10
  const std::vector<uint8_t> p = QuantizeOk(DType::kQ4_0, positive);
  EXPECT_EQ(p[0], 0x00);
  EXPECT_EQ(p[1], 0xbc);  // -1.0
  EXPECT_EQ(p[2], 0x80);
  EXPECT_EQ(p[3], 0x8a);
}

// q4_1: d = (max - min)/15, m = min, codes trunc((x - min)/d + 0.5).
TEST(QuantizeTest, Q4_1MatchesGgmlRounding) {
  std::vector<float> x(32, 2.0f);
  x[0] = -1.0f;   // min: d = 15/15 = 1, code 0
  x[1] = 14.0f;   // max: code 15
  x[2] = 0.5f;    // 1.5 + 0.5 = 2
  x[16] = -0.5f;  // 0.5 + 0.5 = 1
  x[17] = 1.49f;  // 2.49 + 0.5 = 2.99 -> 2
  const std::vector<uint8_t> b = QuantizeOk(DType::kQ4_1, x);
  std::vector<uint8_t> expected(20, 0x33);  // 2.0: code 3 in both nibbles
  expected[0] = 0x00;
  expected[1] = 0x3c;  // d = 1.0
  expected[2] = 0x00;
  expected[3] = 0xbc;  // m = -1.0
  expected[4] = 0x10;  // x0 = 0, x16 = 1
  expected[5] = 0x2f;  // x1 = 15, x17 = 2
  expected[6] = 0x32;  // x2 = 2, x18 = 3
  EXPECT_EQ(b, expected);
}

// q5_0: d = max/-16, codes trunc(x/d + 16.5) capped at 31, fifth bits in a little-endian word.
TEST(QuantizeTest, Q5_0MatchesGgmlRounding) {
  std::vector<float> x(32, 0.0f);
  x[0] = -16.0f;  // d = 1, code 0
  x[1] = 2.5f;    // 19: fifth bit set
  x[2] = -0.5f;   // 16: fifth bit set, nibble 0
  x[3] = -1.0f;   // 15
  x[31] = 15.7f;  // trunc(32.2) = 32, capped at 31
  const std::vector<uint8_t> b = QuantizeOk(DType::kQ5_0, x);
  // Zeros are code 16: fifth bit set, nibble 0. Clear fifth bits: elements 0 and 3.
  std::vector<uint8_t> expected(22, 0x00);
  expected[0] = 0x00;
  expected[1] = 0x3c;
  const uint32_t qh = 0xffffffffu & ~(1u << 0) & ~(1u << 3);
  for (int i = 0; i < 4; ++i) expected[2 + i] = static_cast<uint8_t>(qh >> (8 * i));
  expected[6 + 1] = 0x03;   // x1: 19 & 15 = 3
  expected[6 + 3] = 0x0f;   // x3: 15
  expected[6 + 15] = 0xf0;  // x31: 31 & 15 in the high nibble
  EXPECT_EQ(b, expected);
}

// q5_1: d = (max - min)/31, m = min, codes trunc((x - min)/d + 0.5).
TEST(QuantizeTest, Q5_1MatchesGgmlRounding) {
  std::vector<float> x(32, 0.0f);
  x[0] = -1.0f;  // min, code 0
  x[1] = 30.0f;  // max: d = 31/31 = 1, code 31
  x[2] = 15.5f;  // 16.5 + 0.5 -> 17
  // zeros: code 1
  const std::vector<uint8_t> b = QuantizeOk(DType::kQ5_1, x);
  std::vector<uint8_t> expected(24, 0x11);
  expected[0] = 0x00;
  expected[1] = 0x3c;
  expected[2] = 0x00;
  expected[3] = 0xbc;
  const uint32_t qh = (1u << 1) | (1u << 2);
  for (int i = 0; i < 4; ++i) expected[4 + i] = static_cast<uint8_t>(qh >> (8 * i));
  expected[8 + 0] = 0x10;  // x0 = 0, x16 = 1
  expected[8 + 1] = 0x1f;  // x1 = 31 & 15
  expected[8 + 2] = 0x11;  // x2 = 17 & 15
  EXPECT_EQ(b, expected);
}

// q8_K: the largest-magnitude element maps to -127, codes round half to even, d = F32.
TEST(QuantizeTest, Q8_KMatchesGgmlRounding) {
  std::vector<float> x(256, 0.0f);
  x[0] = -127.0f;  // iscale 1, d 1
  x[1] = 2.5f;     // 2 (even)
  x[2] = 3.5f;     // 4
  x[3] = -2.5f;    // -2
  x[17] = 100.0f;
  const std::vector<uint8_t> b = QuantizeOk(DType::kQ8_K, x);
  float d;
  std::memcpy(&d, b.data(), 4);
  EXPECT_EQ(d, 1.0f);
  EXPECT_EQ(static_cast<int8_t>(b[4 + 0]), -127);
  EXPECT_EQ(static_cast<int8_t>(b[4 + 1]), 2);
  EXPECT_EQ(static_cast<int8_t>(b[4 + 2]), 4);
  EXPECT_EQ(static_cast<int8_t>(b[4 + 3]), -2);
  EXPECT_EQ(static_cast<int8_t>(b[4 + 17]), 100);
  int16_t sums[16];
  std::memcpy(sums, b.data() + 260, 32);
  EXPECT_EQ(sums[0], -127 + 2 + 4 - 2);
  EXPECT_EQ(sums[1], 100);
  EXPECT_EQ(sums[2], 0);

  x[0] = 127.0f;  // positive extreme: iscale -1, so d = -1 and codes flip sign
  const std::vector<uint8_t> flipped = QuantizeOk(DType::kQ8_K, x);
  std::memcpy(&d, flipped.data(), 4);
  EXPECT_EQ(d, -1.0f);
  EXPECT_EQ(static_cast<int8_t>(flipped[4 + 0]), -127);
  EXPECT_EQ(static_cast<int8_t>(flipped[4 + 1]), -2);
  EXPECT_EQ(static_cast<int8_t>(flipped[4 + 2]), -4);
}

TEST(QuantizeTest, HalfPrecisionRoundsToNearestEven) {
  // 1 + 2^-11 is halfway between F16 1.0 and its successor: ties to even gives 1.0.
  const std::vector<float> x = {1.0f + std::ldexp(1.0f, -11), -2.0f, 1.0f + std::ldexp(3.0f, -11)};
  const std::vector<uint8_t> f16 = QuantizeOk(DType::kF16, x);
  EXPECT_EQ(f16, (std::vector<uint8_t>{0x00, 0x3c, 0x00, 0xc0, 0x02, 0x3c}));
  const std::vector<float> b = {1.0f + std::ldexp(1.0f, -8), -3.0f};
  const std::vector<uint8_t> bf16 = QuantizeOk(DType::kBF16, b);
  EXPECT_EQ(bf16, (std::vector<uint8_t>{0x80, 0x3f, 0x40, 0xc0}));
}

// The packers write the bytes worked out by hand in dequantize_test.cpp.
TEST(QuantizeTest, ScalePackersProduceThePublishedBytes) {
  const uint8_t scale[8] = {1, 63, 17, 40, 33, 63, 48, 5};
  const uint8_t min[8] = {0, 2, 63, 21, 50, 1, 63, 36};
  uint8_t packed[12];
  PackScaleMinK4(scale, min, packed);
  const uint8_t expected_k4[12] = {0x81, 0xff, 0xd1, 0x28, 0xc0, 0x02,
                                   0xff, 0x95, 0x21, 0x1f, 0xf0, 0x45};
  EXPECT_EQ(0, std::memcmp(packed, expected_k4, 12));

  const int8_t q3[16] = {-32, -1, 0, 31, 5, -17, 12, -8, 1, -31, 20, -3, 7, 15, -16, 2};
  PackQ3KScales(q3, packed);
  const uint8_t expected_q3[12] = {0x10, 0x1f, 0x40, 0xdf, 0x75, 0xff,
                                   0x0c, 0x28, 0xa8, 0x81, 0x7a, 0x97};
  EXPECT_EQ(0, std::memcmp(packed, expected_q3, 12));
}

TEST(QuantizeTest, BlockStructsMatchDTypeTable) {
  EXPECT_EQ(Traits(DType::kQ4_0).block_bytes, static_cast<int>(sizeof(BlockQ4_0)));
  EXPECT_EQ(Traits(DType::kQ4_1).block_bytes, static_cast<int>(sizeof(BlockQ4_1)));
  EXPECT_EQ(Traits(DType::kQ5_0).block_bytes, static_cast<int>(sizeof(BlockQ5_0)));
  EXPECT_EQ(Traits(DType::kQ5_1).block_bytes, static_cast<int>(sizeof(BlockQ5_1)));
  EXPECT_EQ(Traits(DType::kQ8_0).block_bytes, static_cast<int>(sizeof(BlockQ8_0)));
  EXPECT_EQ(Traits(DType::kQ2_K).block_bytes, static_cast<int>(sizeof(BlockQ2_K)));
  EXPECT_EQ(Traits(DType::kQ3_K).block_bytes, static_cast<int>(sizeof(BlockQ3_K)));
  EXPECT_EQ(Traits(DType::kQ4_K).block_bytes, static_cast<int>(sizeof(BlockQ4_K)));
  EXPECT_EQ(Traits(DType::kQ5_K).block_bytes, static_cast<int>(sizeof(BlockQ5_K)));
  EXPECT_EQ(Traits(DType::kQ6_K).block_bytes, static_cast<int>(sizeof(BlockQ6_K)));
  EXPECT_EQ(Traits(DType::kQ8_K).block_bytes, static_cast<int>(sizeof(BlockQ8_K)));
}

// --- Bad calls -------------------------------------------------------------------------------

TEST(QuantizeTest, RejectsPartialBlocks) {
  std::vector<float> x(1024, 1.0f);
  std::vector<uint8_t> out(4096);
  for (auto [dtype, n] : {std::pair{DType::kQ4_0, int64_t{31}},
                          {DType::kQ5_1, 48},
                          {DType::kQ2_K, 128},
                          {DType::kQ8_K, 300},
                          {DType::kQ4_K, -256},
                          {DType::kBF16, -2}}) {
    const Status status = Quantize(dtype, x.data(), out.data(), n);
    ASSERT_FALSE(status.has_value()) << DTypeName(dtype) << " " << n;
    EXPECT_EQ(status.error().code, ErrorCode::kInvalidInput);
    EXPECT_NE(status.error().message.find(std::string(DTypeName(dtype))), std::string::npos)
        << status.error().message;
  }
}

TEST(QuantizeTest, RejectsUnsupportedTypes) {
  std::vector<float> x(256, 1.0f);
  std::vector<uint8_t> out(4096);
  for (DType dtype :
       {DType::kQ8_1, DType::kIQ3_S, DType::kIQ1_M, DType::kTQ2_0, DType::kI16, DType::kI64}) {
    const Status status = Quantize(dtype, x.data(), out.data(), 256);
    ASSERT_FALSE(status.has_value()) << DTypeName(dtype);
    EXPECT_EQ(status.error().code, ErrorCode::kUnsupported);
    EXPECT_NE(status.error().message.find(std::string(DTypeName(dtype))), std::string::npos)
        << status.error().message;
  }
  const Status unknown = Quantize(static_cast<DType>(1234), x.data(), out.data(), 256);
  ASSERT_FALSE(unknown.has_value());
  EXPECT_EQ(unknown.error().code, ErrorCode::kUnsupported);
}

TEST(QuantizeTest, RejectsValuesBlockTypesCannotHold) {
  std::vector<uint8_t> out(4096);
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                    -std::numeric_limits<float>::infinity()}) {
    for (DType dtype : {DType::kQ4_0, DType::kQ8_0, DType::kQ4_K, DType::kQ6_K, DType::kQ8_K}) {
      std::vector<float> x(256, 0.5f);
      x[77] = bad;
      const Status status = Quantize(dtype, x.data(), out.data(), 256);
      ASSERT_FALSE(status.has_value()) << DTypeName(dtype) << " " << bad;
      EXPECT_EQ(status.error().code, ErrorCode::kInvalidInput);
      EXPECT_NE(status.error().message.find("element 77"), std::string::npos)
          << status.error().message;
    }
  }
  // Past the F16 range the scales of F16-scaled blocks would overflow; q8_K's F32 scale copes.
  std::vector<float> big(256, 0.5f);
  big[3] = -1e6f;
  const Status q4 = Quantize(DType::kQ4_K, big.data(), out.data(), 256);
  ASSERT_FALSE(q4.has_value());
  EXPECT_NE(q4.error().message.find("element 3"), std::string::npos) << q4.error().message;
  EXPECT_TRUE(Quantize(DType::kQ8_K, big.data(), out.data(), 256).has_value());
  // Plain float types convert as IEEE does: NaN stays NaN, overflow becomes inf.
  std::vector<float> odd = {std::numeric_limits<float>::quiet_NaN(), 1e6f};
  ASSERT_TRUE(Quantize(DType::kF16, odd.data(), out.data(), 2).has_value());
  const int nan_bits = out[0] | out[1] << 8;
  EXPECT_EQ(nan_bits & 0x7c00, 0x7c00);  // NaN: exponent all ones and a nonzero mantissa
  EXPECT_NE(nan_bits & 0x03ff, 0);
  EXPECT_EQ(out[2] | out[3] << 8, 0x7c00);  // +inf
}

// --- QuantizeRows: importance and bad calls (the bytes against ggml: quantize_ggml_test.cpp) ---

// The importance-weighted error Σ imp·(x - decoded)² of rows quantized with and without it.
double WeightedError(DType dtype, const std::vector<float>& x, int64_t cols,
                     const std::vector<float>& imp, const float* used) {
  const int64_t rows = static_cast<int64_t>(x.size()) / cols;
  std::vector<uint8_t> q(*BytesFor(dtype, x.size()));
  EXPECT_TRUE(QuantizeRows(dtype, x.data(), q.data(), rows, cols, used).has_value());
  std::vector<float> y(x.size());
  EXPECT_TRUE(Dequantize(dtype, q.data(), y.data(), static_cast<int64_t>(x.size())).has_value());
  double error = 0;
  for (size_t i = 0; i < x.size(); ++i) error += imp[i % cols] * std::pow(x[i] - y[i], 2);
  return error;
}

// A few columns carry nearly all the importance (an imatrix's outlier channels): with the
// importance the searches spend their levels on them, so the error that matters drops.
TEST(QuantizeTest, ImportanceLowersTheWeightedError) {
  constexpr int64_t kCols = 512;
  std::vector<float> x(16 * kCols);
  uint32_t state = 7;
  for (float& v : x) {  // uniform-ish in [-1, 1), deterministic
    state = state * 1664525u + 1013904223u;
    v = static_cast<float>(state >> 8) / static_cast<float>(1 << 23) - 1.0f;
  }
  std::vector<float> imp(kCols, 0.01f);
  for (int64_t c = 0; c < kCols; c += 5) imp[c] = 100.0f;
  for (DType dtype : {DType::kQ4_0, DType::kQ4_1, DType::kQ5_0, DType::kQ5_1, DType::kQ2_K,
                      DType::kQ3_K, DType::kQ4_K, DType::kQ5_K, DType::kQ6_K, DType::kIQ4_NL,
                      DType::kIQ4_XS}) {
    const double plain = WeightedError(dtype, x, kCols, imp, nullptr);
    const double weighted = WeightedError(dtype, x, kCols, imp, imp.data());
    EXPECT_LT(weighted, plain * 0.95) << DTypeName(dtype);
  }
}

TEST(QuantizeTest, RowsRefuseBadInputNamingRowAndColumn) {
  std::vector<float> x(3 * 64, 0.5f);
  std::vector<uint8_t> q(3 * 72);
  x[64 + 17] = std::numeric_limits<float>::quiet_NaN();
  Status s = QuantizeRows(DType::kQ8_0, x.data(), q.data(), 3, 64, nullptr);
  ASSERT_FALSE(s.has_value());
  EXPECT_EQ(s.error().code, ErrorCode::kInvalidInput);
  EXPECT_NE(s.error().message.find("row 1, column 17"), std::string::npos) << s.error().message;

  x[64 + 17] = 0.5f;
  std::vector<float> imp(64, 1.0f);
  imp[9] = -1.0f;
  s = QuantizeRows(DType::kQ4_0, x.data(), q.data(), 3, 64, imp.data());
  ASSERT_FALSE(s.has_value());
  EXPECT_NE(s.error().message.find("importance of column 9"), std::string::npos)
      << s.error().message;

  s = QuantizeRows(DType::kQ4_K, x.data(), q.data(), 1, 192, nullptr);  // not whole super-blocks
  ASSERT_FALSE(s.has_value());
  EXPECT_NE(s.error().message.find("256"), std::string::npos) << s.error().message;

  s = QuantizeRows(DType::kIQ2_XXS, x.data(), q.data(), 1, 256, nullptr);
  ASSERT_FALSE(s.has_value());
  EXPECT_EQ(s.error().code, ErrorCode::kUnsupported);
  EXPECT_NE(s.error().message.find("iq2_xxs"), std::string::npos) << s.error().message;
}

}  // namespace
}  // namespace kite
