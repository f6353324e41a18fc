#include "graph/encoding.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "graph/testing.h"

namespace kite {
namespace {

using testing::Contains;

// The message of ValidateEncoding's error, or "" when it accepts.
std::string Problem(const QuantEncoding& e, std::vector<int64_t> shape, DType dtype) {
  const Status status = ValidateEncoding(e, shape, dtype);
  return status ? "" : status.error().message;
}

// (Fields are assigned, not designated: GCC warns about every field a designated list omits.)
QuantEncoding Encoding(int32_t bits, bool is_signed, EncodingGranularity granularity,
                       std::vector<float> scales, std::vector<int32_t> offsets = {}) {
  QuantEncoding e;
  e.bits = bits;
  e.is_signed = is_signed;
  e.granularity = granularity;
  e.scales = std::move(scales);
  e.offsets = std::move(offsets);
  return e;
}

QuantEncoding PerTensor(int32_t bits, bool is_signed, float scale, int32_t offset) {
  return Encoding(bits, is_signed, EncodingGranularity::kPerTensor, {scale}, {offset});
}

QuantEncoding PerAxis(int32_t bits, bool is_signed, int32_t axis, std::vector<float> scales,
                      std::vector<int32_t> offsets = {}) {
  QuantEncoding e = Encoding(bits, is_signed, EncodingGranularity::kPerAxis, std::move(scales),
                             std::move(offsets));
  e.axis = axis;
  return e;
}

QuantEncoding PerBlock(int32_t bits, bool is_signed, int32_t block_axis, int64_t block_size,
                       std::vector<float> scales, std::vector<int32_t> offsets = {}) {
  QuantEncoding e = Encoding(bits, is_signed, EncodingGranularity::kPerBlock, std::move(scales),
                             std::move(offsets));
  e.block_axis = block_axis;
  e.block_size = block_size;
  return e;
}

// A [4, 8] weight in 4-bit LPBQ: channels along dim 0, blocks of 4 along dim 1 (2 per row).
QuantEncoding Lpbq() {
  QuantEncoding e = Encoding(4, true, EncodingGranularity::kLpbq, {0.5f, 0.25f, 1.0f, 2.0f});
  e.axis = 0;
  e.block_axis = 1;
  e.block_size = 4;
  e.multiplier_bits = 4;
  e.multipliers = {1, 2, 3, 4, 5, 6, 7, 15};
  return e;
}

TEST(QuantEncoding, RangesAndStorage) {
  const QuantEncoding u8 = PerTensor(8, false, 0.1f, -128);
  EXPECT_EQ(u8.q_min(), 0);
  EXPECT_EQ(u8.q_max(), 255);
  EXPECT_EQ(StorageDType(u8), DType::kU8);
  const QuantEncoding s16 = PerTensor(16, true, 0.1f, 0);
  EXPECT_EQ(s16.q_min(), -32768);
  EXPECT_EQ(s16.q_max(), 32767);
  EXPECT_EQ(StorageDType(s16), DType::kI16);
  const QuantEncoding s4 = PerTensor(4, true, 0.1f, 0);
  EXPECT_EQ(s4.q_min(), -8);
  EXPECT_EQ(s4.q_max(), 7);
  EXPECT_EQ(StorageDType(s4), DType::kI4);  // packed, two a byte
  EXPECT_EQ(StorageDType(PerTensor(4, false, 0.1f, 0)), DType::kU4);
  EXPECT_EQ(StorageDType(PerTensor(16, false, 1, 0)), DType::kU16);
}

TEST(QuantEncoding, AcceptsEachGranularity) {
  EXPECT_EQ(Problem(PerTensor(8, false, 0.02f, -128), {13, 64}, DType::kU8), "");
  EXPECT_EQ(Problem(PerAxis(8, true, 0, {1, 2, 3}), {3, 64}, DType::kI8), "");
  const QuantEncoding per_block =
      PerBlock(4, false, 1, 32, std::vector<float>(3 * 2, 0.1f), std::vector<int32_t>(6, -8));
  EXPECT_EQ(Problem(per_block, {3, 64}, DType::kU4), "");
  EXPECT_EQ(Problem(Lpbq(), {4, 8}, DType::kI4), "");
}

TEST(QuantEncoding, ErrorsNameWhatIsWrong) {
  EXPECT_TRUE(Contains(Problem(PerTensor(6, false, 1, 0), {4}, DType::kU8),
                       "bit width 6 is not 4, 8 or 16"));
  EXPECT_TRUE(Contains(Problem(PerTensor(8, false, 1, 0), {4}, DType::kI8),
                       "unsigned 8-bit encoding is stored as u8, not i8"));
  EXPECT_TRUE(Contains(Problem(PerTensor(8, false, 0.0f, 0), {4}, DType::kU8),
                       "scale 0 is 0.000000, expected finite and > 0"));
  EXPECT_TRUE(Contains(Problem(PerTensor(8, false, 1, 1), {4}, DType::kU8),
                       "offset 0 is 1: real 0 would be q = -1, outside u8 range [0, 255]"));
  EXPECT_TRUE(Contains(Problem(PerTensor(8, true, 1, -128), {4}, DType::kI8),
                       "outside i8 range [-128, 127]"));
  // 4-bit codes are packed two a byte: a byte each is refused.
  EXPECT_TRUE(Contains(Problem(PerTensor(4, true, 1, 0), {4}, DType::kI8),
                       "signed 4-bit encoding is stored as i4, not i8"));

  QuantEncoding per_axis = PerAxis(8, false, 2, {1, 2, 3});
  EXPECT_TRUE(Contains(Problem(per_axis, {3, 64}, DType::kU8), "axis 2 is outside shape [3, 64]"));
  per_axis.axis = 1;
  EXPECT_TRUE(Contains(Problem(per_axis, {3, 64}, DType::kU8),
                       "3 scales for per-axis on shape [3, 64], expected 64"));
  per_axis.axis = 0;
  per_axis.offsets = {0, 0};
  EXPECT_TRUE(Contains(Problem(per_axis, {3, 64}, DType::kU8),
                       "2 offsets for 3 scales; expected none or one each"));
  per_axis.offsets.clear();
  per_axis.multipliers = {1};
  EXPECT_TRUE(Contains(Problem(per_axis, {3, 64}, DType::kU8), "only lpbq has them"));

  QuantEncoding per_block = PerBlock(8, false, 1, 48, {1, 1, 1});
  EXPECT_TRUE(Contains(Problem(per_block, {3, 64}, DType::kU8),
                       "block_size 48 does not divide dim 1 (64) of shape [3, 64]"));
  per_block.block_size = 0;
  EXPECT_TRUE(Contains(Problem(per_block, {3, 64}, DType::kU8), "block_size 0 does not divide"));
  per_block.block_size = 32;
  EXPECT_TRUE(Contains(Problem(per_block, {3, 64}, DType::kU8),
                       "3 scales for per-block on shape [3, 64], expected 6"));
}

TEST(QuantEncoding, LpbqErrors) {
  QuantEncoding e = Lpbq();
  e.block_axis = 0;
  EXPECT_TRUE(Contains(Problem(e, {4, 8}, DType::kI4), "axis and block_axis are both 0"));
  e = Lpbq();
  e.multipliers.pop_back();
  EXPECT_TRUE(Contains(Problem(e, {4, 8}, DType::kI4),
                       "7 block multipliers on shape [4, 8], expected 8 (one per block of 4 "
                       "along dim 1)"));
  e = Lpbq();
  e.multipliers[3] = 0;
  EXPECT_TRUE(
      Contains(Problem(e, {4, 8}, DType::kI4), "block multiplier 3 is 0, expected 1..15 (4 bits)"));
  e = Lpbq();
  e.multiplier_bits = 3;  // 15 no longer fits
  EXPECT_TRUE(Contains(Problem(e, {4, 8}, DType::kI4), "block multiplier 7 is 15, expected 1..7"));
  e.multiplier_bits = 9;
  EXPECT_TRUE(Contains(Problem(e, {4, 8}, DType::kI4), "multiplier_bits 9 is not in 1..8"));
  e = Lpbq();
  e.scales.push_back(1.0f);
  EXPECT_TRUE(
      Contains(Problem(e, {4, 8}, DType::kI4), "5 scales for lpbq on shape [4, 8], expected 4"));
}

TEST(QuantEncoding, ScaleOffsetAtFindsTheElementsChannelAndBlock) {
  const std::vector<int64_t> shape = {4, 8};
  // LPBQ: element (2, 5) is channel 2 (scale 1.0), block 2 * 2 + 1 = 5 (multiplier 6).
  const ScaleOffset lpbq = ScaleOffsetAt(Lpbq(), shape, 2 * 8 + 5);
  EXPECT_EQ(lpbq.scale, 6.0f);
  EXPECT_EQ(lpbq.offset, 0);
  // (3, 7): channel 3 (2.0) times the last multiplier (15).
  EXPECT_EQ(ScaleOffsetAt(Lpbq(), shape, 31).scale, 30.0f);

  const QuantEncoding per_axis =
      PerAxis(8, false, 1, {1, 2, 3, 4, 5, 6, 7, 8}, {0, -1, -2, -3, -4, -5, -6, -7});
  ASSERT_EQ(Problem(per_axis, shape, DType::kU8), "");
  EXPECT_EQ(ScaleOffsetAt(per_axis, shape, 2 * 8 + 5).scale, 6.0f);
  EXPECT_EQ(ScaleOffsetAt(per_axis, shape, 2 * 8 + 5).offset, -5);

  // Blocks of 2 along dim 0: scales laid out [2, 8]; (3, 1) is block (1, 1) = scale 9.
  QuantEncoding per_block = PerBlock(8, false, 0, 2, {});
  for (int i = 0; i < 16; ++i) per_block.scales.push_back(static_cast<float>(i));
  per_block.scales[0] = 0.5f;
  ASSERT_EQ(Problem(per_block, shape, DType::kU8), "");
  EXPECT_EQ(ScaleOffsetAt(per_block, shape, 3 * 8 + 1).scale, 9.0f);
  EXPECT_EQ(ScaleOffsetAt(per_block, shape, 1 * 8 + 0).scale, 0.5f);

  EXPECT_EQ(ScaleOffsetAt(PerTensor(8, false, 0.25f, -3), shape, 17).scale, 0.25f);
  EXPECT_EQ(ScaleOffsetAt(PerTensor(8, false, 0.25f, -3), shape, 17).offset, -3);
}

TEST(QuantEncoding, StringNamesWidthAndLayout) {
  EXPECT_EQ(EncodingString(PerTensor(8, false, 1, 0)), "u8 per-tensor [1 scales]");
  EXPECT_EQ(EncodingString(Lpbq()), "s4 lpbq(axis 0, 4 along 1, u4 x) [4 scales]");
}

}  // namespace
}  // namespace kite
