// Dequantize against blocks built byte by byte from ggml's published layouts (ggml-common.h),
// with expected values worked out here from each type's formula. Byte offsets are written out
// rather than taken from quant_blocks.h, so a wrong struct layout fails too. Scales are powers
// of two (and small integers), so every expected value is exact.
#include "tensor/dequantize.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace kite {
namespace {

void PutHalf(std::vector<uint8_t>& bytes, size_t offset, uint16_t bits) {
  bytes[offset] = static_cast<uint8_t>(bits & 0xff);  // little-endian
  bytes[offset + 1] = static_cast<uint8_t>(bits >> 8);
}

// bytes[offset + i] = (i*mul + add) mod 256: a spread of nibbles and bit patterns.
void FillPattern(std::vector<uint8_t>& bytes, size_t offset, size_t count, int mul, int add) {
  for (size_t i = 0; i < count; ++i) {
    bytes[offset + i] = static_cast<uint8_t>((static_cast<int>(i) * mul + add) & 0xff);
  }
}

std::vector<float> Decode(DType dtype, const std::vector<uint8_t>& bytes, int64_t n) {
  std::vector<float> out(n, std::numeric_limits<float>::quiet_NaN());
  const Status status = Dequantize(dtype, bytes.data(), out.data(), n);
  EXPECT_TRUE(status.has_value()) << status.error().message;
  return out;
}

// F16 bit patterns used below.
constexpr uint16_t kHalfOne = 0x3c00;
constexpr uint16_t kHalfTwo = 0x4000;
constexpr uint16_t kHalfHalf = 0x3800;     // 0.5
constexpr uint16_t kHalfQuarter = 0x3400;  // 0.25
constexpr uint16_t kHalfEighth = 0x3000;   // 0.125
constexpr uint16_t kHalfMinusOne = 0xbc00;
constexpr uint16_t kHalfMinusHalf = 0xb800;  // -0.5
constexpr uint16_t kHalfMinusQuarter = 0xb400;

TEST(DequantizeTest, PlainFloats) {
  std::vector<uint8_t> f32(8);
  const float values[2] = {1.5f, -2.0f};
  std::memcpy(f32.data(), values, 8);
  EXPECT_EQ(Decode(DType::kF32, f32, 2), (std::vector<float>{1.5f, -2.0f}));

  std::vector<uint8_t> f16(10);
  PutHalf(f16, 0, kHalfOne);
  PutHalf(f16, 2, 0xc000);  // -2
  PutHalf(f16, 4, 0x0001);  // smallest subnormal, 2^-24
  PutHalf(f16, 6, 0x7bff);  // largest finite, 65504
  PutHalf(f16, 8, 0x7c00);  // +inf
  EXPECT_EQ(Decode(DType::kF16, f16, 5),
            (std::vector<float>{1.0f, -2.0f, std::ldexp(1.0f, -24), 65504.0f,
                                std::numeric_limits<float>::infinity()}));

  std::vector<uint8_t> bf16(6);
  PutHalf(bf16, 0, 0x3f80);  // 1
  PutHalf(bf16, 2, 0xc040);  // -3
  PutHalf(bf16, 4, 0x0001);  // F32 bits 0x00010000, the subnormal 2^-133
  EXPECT_EQ(Decode(DType::kBF16, bf16, 3),
            (std::vector<float>{1.0f, -3.0f, std::ldexp(1.0f, -133)}));
}

// q4_0: d at 0, 16 nibble bytes at 2; element j < 16 in the low nibble of byte j, j+16 in the
// high one; y = d*(q - 8).
TEST(DequantizeTest, Q4_0) {
  std::vector<uint8_t> b(18);
  PutHalf(b, 0, kHalfHalf);
  FillPattern(b, 2, 16, 37, 11);
  b[2] = 0xf0;
  const std::vector<float> y = Decode(DType::kQ4_0, b, 32);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], 0.5f * ((b[2 + j] & 0xf) - 8)) << j;
    EXPECT_EQ(y[j + 16], 0.5f * ((b[2 + j] >> 4) - 8)) << j;
  }
  EXPECT_EQ(y[0], -4.0f);  // 0xf0: low 0
  EXPECT_EQ(y[16], 3.5f);  // 0xf0: high 15
  EXPECT_EQ(y[1], -4.0f);  // byte 0x30
  EXPECT_EQ(y[17], -2.5f);
  EXPECT_EQ(y[15], -1.0f);  // byte 0x36
  EXPECT_EQ(y[31], -2.5f);
}

// q4_1: d at 0, m at 2, nibbles at 4 as in q4_0; y = d*q + m.
TEST(DequantizeTest, Q4_1) {
  std::vector<uint8_t> b(20);
  PutHalf(b, 0, kHalfQuarter);
  PutHalf(b, 2, kHalfMinusOne);
  FillPattern(b, 4, 16, 29, 3);
  const std::vector<float> y = Decode(DType::kQ4_1, b, 32);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], 0.25f * (b[4 + j] & 0xf) - 1.0f) << j;
    EXPECT_EQ(y[j + 16], 0.25f * (b[4 + j] >> 4) - 1.0f) << j;
  }
  EXPECT_EQ(y[0], -0.25f);  // byte 0x03
  EXPECT_EQ(y[16], -1.0f);
  EXPECT_EQ(y[5], 0.0f);  // byte 0x94
  EXPECT_EQ(y[21], 1.25f);
}

// q5_0: d at 0, the fifth bits at 2..5 (bit j of the little-endian word for element j), nibbles
// at 6; y = d*(q - 16).
TEST(DequantizeTest, Q5_0) {
  std::vector<uint8_t> b(22);
  PutHalf(b, 0, kHalfMinusQuarter);
  b[2] = 0x01;  // element 0
  b[3] = 0x80;  // element 15
  b[4] = 0x00;
  b[5] = 0xff;  // elements 24..31
  FillPattern(b, 6, 16, 37, 11);
  const std::vector<float> y = Decode(DType::kQ5_0, b, 32);
  for (int j = 0; j < 32; ++j) {
    const int nibble = j < 16 ? b[6 + j] & 0xf : b[6 + j - 16] >> 4;
    const int fifth = (b[2 + j / 8] >> (j % 8)) & 1;
    EXPECT_EQ(y[j], -0.25f * ((nibble | fifth << 4) - 16)) << j;
  }
  EXPECT_EQ(y[0], -2.75f);   // 11 + 16 - 16 = 11
  EXPECT_EQ(y[15], -1.5f);   // 6 + 16 - 16 = 6
  EXPECT_EQ(y[16], 4.0f);    // 0 - 16
  EXPECT_EQ(y[31], -0.75f);  // 3 + 16 - 16
}

// q5_1: d at 0, m at 2, fifth bits at 4..7, nibbles at 8; y = d*q + m.
TEST(DequantizeTest, Q5_1) {
  std::vector<uint8_t> b(24);
  PutHalf(b, 0, kHalfHalf);
  PutHalf(b, 2, kHalfTwo);
  b[4] = 0xff;  // elements 0..7
  b[5] = 0x00;
  b[6] = 0x01;  // element 16
  b[7] = 0x80;  // element 31
  FillPattern(b, 8, 16, 37, 11);
  const std::vector<float> y = Decode(DType::kQ5_1, b, 32);
  for (int j = 0; j < 32; ++j) {
    const int nibble = j < 16 ? b[8 + j] & 0xf : b[8 + j - 16] >> 4;
    const int fifth = (b[4 + j / 8] >> (j % 8)) & 1;
    EXPECT_EQ(y[j], 0.5f * (nibble | fifth << 4) + 2.0f) << j;
  }
  EXPECT_EQ(y[0], 15.5f);   // q = 27
  EXPECT_EQ(y[15], 5.0f);   // q = 6
  EXPECT_EQ(y[16], 10.0f);  // q = 16
  EXPECT_EQ(y[31], 11.5f);  // q = 19
}

// q8_0: d at 0, 32 signed bytes at 2; y = d*q.
TEST(DequantizeTest, Q8_0) {
  std::vector<uint8_t> b(34);
  PutHalf(b, 0, kHalfMinusHalf);
  FillPattern(b, 2, 32, 53, 200);
  b[4] = 0x80;
  b[5] = 0x7f;
  const std::vector<float> y = Decode(DType::kQ8_0, b, 32);
  for (int j = 0; j < 32; ++j) EXPECT_EQ(y[j], -0.5f * static_cast<int8_t>(b[2 + j])) << j;
  EXPECT_EQ(y[0], 28.0f);    // 0xc8 = -56
  EXPECT_EQ(y[1], 1.5f);     // 0xfd = -3
  EXPECT_EQ(y[2], 64.0f);    // -128
  EXPECT_EQ(y[3], -63.5f);   // 127
  EXPECT_EQ(y[31], -25.5f);  // 0x33 = 51
}

// The 2-bit code of element e in q2_K/q3_K: byte 32*(e/128) + e%32 of qs, bits 2*((e%128)/32).
int TwoBitCode(const uint8_t* qs, int e) {
  return (qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3;
}

// q2_K: scales at 0..15 (low nibble sc, high nibble m per sub-block of 16), codes at 16..79,
// d at 80, dmin at 82; y = d*sc*q - dmin*m.
TEST(DequantizeTest, Q2_K) {
  std::vector<uint8_t> b(84);
  const uint8_t scales[16] = {0x00, 0x1f, 0xf1, 0x37, 0xa5, 0x5a, 0xff, 0x10,
                              0x01, 0x88, 0x4c, 0xc4, 0x2e, 0xe2, 0x93, 0x39};
  std::memcpy(b.data(), scales, 16);
  FillPattern(b, 16, 64, 41, 5);
  PutHalf(b, 80, kHalfHalf);
  PutHalf(b, 82, kHalfQuarter);
  const std::vector<float> y = Decode(DType::kQ2_K, b, 256);
  for (int e = 0; e < 256; ++e) {
    const int sc = scales[e / 16] & 0xf;
    const int m = scales[e / 16] >> 4;
    EXPECT_EQ(y[e], 0.5f * sc * TwoBitCode(b.data() + 16, e) - 0.25f * m) << e;
  }
  EXPECT_EQ(y[16], 7.25f);    // sc 15, m 1; qs[16] = 0x95, bits 0-1: q = 1
  EXPECT_EQ(y[100], 11.25f);  // sc 15, m 15; qs[4] = 0xa9, bits 6-7: q = 2
  EXPECT_EQ(y[200], 13.5f);   // sc 14, m 2; qs[40] = 0x6d, bits 4-5: q = 2
  EXPECT_EQ(y[255], -0.75f);  // sc 9, m 3; qs[63] = 0x1c, bits 6-7: q = 0
}

// q3_K: hmask at 0..31, low bits at 32..95, 12 scale bytes at 96, d at 108;
// y = d*s*(q2 - (high bit ? 0 : 4)), with the high bit of element e at bit e/32 of hmask[e%32].
TEST(DequantizeTest, Q3_K) {
  // Signed scales s (-32..31) stored as u = s + 32: the low nibble of u for sub-block j is in
  // byte j%8 (high nibble of it for j >= 8), its top two bits at bit 2*(j/4) of byte 8 + j%4.
  const int s[16] = {-32, -1, 0, 31, 5, -17, 12, -8, 1, -31, 20, -3, 7, 15, -16, 2};
  // u = {0,31,32,63, 37,15,44,24, 33,1,52,29, 39,47,16,34}
  // bytes 0..7: low nibbles of u[j] | low nibbles of u[j+8] << 4
  // bytes 8..11: (u[k]>>4) | (u[k+4]>>4) << 2 | (u[k+8]>>4) << 4 | (u[k+12]>>4) << 6
  const uint8_t packed[12] = {0x10, 0x1f, 0x40, 0xdf, 0x75, 0xff,
                              0x0c, 0x28, 0xa8, 0x81, 0x7a, 0x97};
  std::vector<uint8_t> b(110);
  FillPattern(b, 0, 32, 71, 13);
  FillPattern(b, 32, 64, 23, 1);
  std::memcpy(b.data() + 96, packed, 12);
  PutHalf(b, 108, kHalfMinusHalf);
  const std::vector<float> y = Decode(DType::kQ3_K, b, 256);
  for (int e = 0; e < 256; ++e) {
    const int high = (b[e % 32] >> (e / 32)) & 1;
    const int q = TwoBitCode(b.data() + 32, e) - (high ? 0 : 4);
    EXPECT_EQ(y[e], -0.5f * s[e / 16] * q) << e;
  }
  EXPECT_EQ(y[0], 16.0f);     // s -32; low 1, high bit set: q = 1
  EXPECT_EQ(y[31], -1.0f);    // s -1; low 2, hmask[31] = 0xa6 bit 0 clear: q = -2
  EXPECT_EQ(y[56], 31.0f);    // s 31; low 2, hmask[24] = 0xb5 bit 1 clear: q = -2
  EXPECT_EQ(y[159], -31.0f);  // s -31; qs[63] = 0xaa bits 0-1 = 2, hmask[31] bit 4 clear: q = -2
  EXPECT_EQ(y[255], -2.0f);   // s 2; qs[63] bits 6-7 = 2, hmask[31] bit 7 set: q = 2
}

// Scale bytes shared by the q4_K and q5_K tests: 6-bit scales and mins of 8 sub-blocks.
constexpr int kK4Scale[8] = {1, 63, 17, 40, 33, 63, 48, 5};
constexpr int kK4Min[8] = {0, 2, 63, 21, 50, 1, 63, 36};
// Bytes 0..3: scale j | (scale j+4 >> 4) << 6; bytes 4..7: min j | (min j+4 >> 4) << 6;
// bytes 8..11: (scale j+4 & 15) | (min j+4 & 15) << 4. E.g. sub-block 5: scale = (0x1f & 15) |
// (0xff >> 6) << 4 = 63, min = (0x1f >> 4) | (0x02 >> 6) << 4 = 1.
constexpr uint8_t kK4Packed[12] = {0x81, 0xff, 0xd1, 0x28, 0xc0, 0x02,
                                   0xff, 0x95, 0x21, 0x1f, 0xf0, 0x45};

// The 4-bit code of element e in q4_K/q5_K: byte 32*(e/64) + e%32, high nibble when e%64 >= 32.
int FourBitCode(const uint8_t* qs, int e) {
  return (qs[32 * (e / 64) + e % 32] >> (4 * ((e % 64) / 32))) & 0xf;
}

// q4_K: d at 0, dmin at 2, scales at 4..15, codes at 16..143; y = d*sc*q - dmin*m.
TEST(DequantizeTest, Q4_K) {
  std::vector<uint8_t> b(144);
  PutHalf(b, 0, kHalfQuarter);
  PutHalf(b, 2, kHalfEighth);
  std::memcpy(b.data() + 4, kK4Packed, 12);
  FillPattern(b, 16, 128, 29, 7);
  const std::vector<float> y = Decode(DType::kQ4_K, b, 256);
  for (int e = 0; e < 256; ++e) {
    const int j = e / 32;
    EXPECT_EQ(y[e], 0.25f * kK4Scale[j] * FourBitCode(b.data() + 16, e) - 0.125f * kK4Min[j]) << e;
  }
  EXPECT_EQ(y[0], 1.75f);       // sc 1, m 0; low nibble of 0x07
  EXPECT_EQ(y[170], 94.375f);   // sub-block 5: sc 63, m 1; high nibble of qs[74] = 0x69
  EXPECT_EQ(y[200], 172.125f);  // sub-block 6: sc 48, m 63; low nibble of qs[104] = 0xcf
  EXPECT_EQ(y[255], 3.0f);      // sub-block 7: sc 5, m 36; high nibble of qs[127] = 0x6a
}

// q5_K: d at 0, dmin at 2, scales at 4..15, fifth bits at 16..47 (bit e/32 of byte e%32), low
// nibbles at 48..175 as in q4_K; y = d*sc*q - dmin*m.
TEST(DequantizeTest, Q5_K) {
  std::vector<uint8_t> b(176);
  PutHalf(b, 0, kHalfQuarter);
  PutHalf(b, 2, kHalfEighth);
  std::memcpy(b.data() + 4, kK4Packed, 12);
  FillPattern(b, 16, 32, 53, 3);
  FillPattern(b, 48, 128, 29, 7);
  const std::vector<float> y = Decode(DType::kQ5_K, b, 256);
  for (int e = 0; e < 256; ++e) {
    const int j = e / 32;
    const int q = FourBitCode(b.data() + 48, e) | ((b[16 + e % 32] >> (e / 32)) & 1) << 4;
    EXPECT_EQ(y[e], 0.25f * kK4Scale[j] * q - 0.125f * kK4Min[j]) << e;
  }
  EXPECT_EQ(y[0], 5.75f);       // q = 7 + 16 (qh[0] = 0x03)
  EXPECT_EQ(y[8], 7.75f);       // q = 15 + 16 (qh[8] = 0xab)
  EXPECT_EQ(y[138], 200.0f);    // sub-block 4: sc 33, m 50; q = 9 + 16 (qh[10] = 0x15, bit 4)
  EXPECT_EQ(y[202], 100.125f);  // sub-block 6: sc 48, m 63; q = 9 (qh[10] bit 6 clear)
}

// q6_K: low nibbles at 0..127, top bits at 128..191, int8 scales at 192..207, d at 208.
// Element e = 128*h + 32*k + l: nibble of ql[64*h + 32*(k%2) + l] (high one when k >= 2), top
// bits at bit 2*k of qh[32*h + l]; y = d*sc*(q - 32).
TEST(DequantizeTest, Q6_K) {
  const int8_t scales[16] = {-128, 127, -1, 1, 0, 64, -64, 33, -33, 100, -7, 7, 12, -99, 55, -2};
  std::vector<uint8_t> b(210);
  FillPattern(b, 0, 128, 19, 5);
  FillPattern(b, 128, 64, 89, 17);
  std::memcpy(b.data() + 192, scales, 16);
  PutHalf(b, 208, kHalfEighth);
  const std::vector<float> y = Decode(DType::kQ6_K, b, 256);
  for (int e = 0; e < 256; ++e) {
    const int h = e / 128;
    const int k = (e % 128) / 32;
    const int l = e % 32;
    const int low = (b[64 * h + 32 * (k % 2) + l] >> (4 * (k / 2))) & 0xf;
    const int top = (b[128 + 32 * h + l] >> (2 * k)) & 3;
    EXPECT_EQ(y[e], 0.125f * scales[e / 16] * ((low | top << 4) - 32)) << e;
  }
  EXPECT_EQ(y[0], 176.0f);       // sc -128; low 5 (ql[0] = 0x05), top 1 (qh[0] = 0x11): q = -11
  EXPECT_EQ(y[100], 40.0f);      // sc -64; high nibble of ql[36] = 0xb1, qh[4] = 0x75 >> 6: q = -5
  EXPECT_EQ(y[130], -111.375f);  // sc -33; low nibble of ql[66] = 0xeb, qh[34] = 0xe3 & 3: q = 27
  EXPECT_EQ(y[255], -5.75f);     // sc -2; high nibble of ql[127] = 0x72, qh[63] = 0xf8 >> 6: q = 23
}

// q8_K: F32 d at 0, 256 signed bytes at 4, 16 int16 sums at 260 (not read); y = d*q.
TEST(DequantizeTest, Q8_K) {
  std::vector<uint8_t> b(292);
  const float d = -0.75f;
  std::memcpy(b.data(), &d, 4);
  FillPattern(b, 4, 256, 13, 7);
  FillPattern(b, 260, 32, 1, 0x5a);
  const std::vector<float> y = Decode(DType::kQ8_K, b, 256);
  for (int e = 0; e < 256; ++e) EXPECT_EQ(y[e], -0.75f * static_cast<int8_t>(b[4 + e])) << e;
  EXPECT_EQ(y[0], -5.25f);  // 7
  EXPECT_EQ(y[255], 4.5f);  // 0xfa = -6
}

// Several blocks in a row, read from an odd address: block i must use its own bytes.
TEST(DequantizeTest, ConsecutiveBlocksAtAnOddAddress) {
  std::vector<uint8_t> storage(1 + 3 * 18);
  for (int i = 0; i < 3; ++i) {
    uint8_t* block = storage.data() + 1 + 18 * i;
    const uint16_t d = i == 0 ? kHalfOne : i == 1 ? kHalfTwo : kHalfMinusHalf;
    block[0] = d & 0xff;
    block[1] = d >> 8;
    std::memset(block + 2, 0x9a, 16);  // low nibble 10 -> q-8 = 2, high 9 -> 1
  }
  std::vector<float> y(96);
  ASSERT_TRUE(Dequantize(DType::kQ4_0, storage.data() + 1, y.data(), 96).has_value());
  const float d[3] = {1.0f, 2.0f, -0.5f};
  for (int i = 0; i < 96; ++i) EXPECT_EQ(y[i], d[i / 32] * ((i % 32) < 16 ? 2 : 1)) << i;
}

TEST(DequantizeTest, EmptyInputIsFine) {
  EXPECT_TRUE(Dequantize(DType::kQ4_K, nullptr, nullptr, 0).has_value());
}

TEST(DequantizeTest, RejectsPartialBlocks) {
  std::vector<uint8_t> bytes(1024);
  std::vector<float> out(1024);
  for (auto [dtype, n] : {std::pair{DType::kQ4_0, int64_t{33}},
                          {DType::kQ8_0, 16},
                          {DType::kQ4_K, 100},
                          {DType::kQ8_K, 512 + 32},
                          {DType::kQ6_K, -256},
                          {DType::kF16, -1}}) {
    const Status status = Dequantize(dtype, bytes.data(), out.data(), n);
    ASSERT_FALSE(status.has_value()) << DTypeName(dtype) << " " << n;
    EXPECT_EQ(status.error().code, ErrorCode::kInvalidInput);
    EXPECT_NE(status.error().message.find(std::string(DTypeName(dtype))), std::string::npos)
        << status.error().message;
  }
}

TEST(DequantizeTest, RejectsUnsupportedTypes) {
  std::vector<uint8_t> bytes(4096);
  std::vector<float> out(256);
  for (DType dtype : {DType::kQ8_1, DType::kIQ2_XXS, DType::kIQ3_S, DType::kIQ2_S, DType::kTQ1_0,
                      DType::kI8, DType::kI32, DType::kF64}) {
    const Status status = Dequantize(dtype, bytes.data(), out.data(), 256);
    ASSERT_FALSE(status.has_value()) << DTypeName(dtype);
    EXPECT_EQ(status.error().code, ErrorCode::kUnsupported);
    EXPECT_NE(status.error().message.find(std::string(DTypeName(dtype))), std::string::npos)
        << status.error().message;
  }
  const Status unknown = Dequantize(static_cast<DType>(99), bytes.data(), out.data(), 256);
  ASSERT_FALSE(unknown.has_value());
  EXPECT_EQ(unknown.error().code, ErrorCode::kUnsupported);
  EXPECT_NE(unknown.error().message.find("99"), std::string::npos) << unknown.error().message;
}

}  // namespace
}  // namespace kite
