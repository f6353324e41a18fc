#include "tensor/int_codes.h"

#include <gtest/gtest.h>

#include <vector>

namespace kite {
namespace {

TEST(IntCodes, FourBitCodesArePackedLowNibbleFirst) {
  const std::vector<int32_t> codes = {-8, 7, -1, 0, 3, -5};
  std::vector<uint8_t> bytes(3, 0xee);
  WriteCodes(DType::kI4, codes.data(), 6, bytes.data());
  // -8 = 0x8 low, 7 high; -1 = 0xf low, 0 high; 3 low, -5 = 0xb high.
  EXPECT_EQ(bytes, (std::vector<uint8_t>{0x78, 0x0f, 0xb3}));
  std::vector<int32_t> back(5);
  ReadCodes(DType::kI4, bytes.data(), 1, 5, back.data());  // from an odd element
  EXPECT_EQ(back, (std::vector<int32_t>{7, -1, 0, 3, -5}));

  const std::vector<int32_t> unsigned_codes = {15, 0, 9, 1};
  WriteCodes(DType::kU4, unsigned_codes.data(), 4, bytes.data());
  EXPECT_EQ(bytes[0], 0x0f);
  EXPECT_EQ(bytes[1], 0x19);
  ReadCodes(DType::kU4, bytes.data(), 0, 4, back.data());
  EXPECT_EQ(std::vector<int32_t>(back.begin(), back.begin() + 4), unsigned_codes);
}

TEST(IntCodes, WideCodesRoundTrip) {
  for (DType dtype : {DType::kI8, DType::kU8, DType::kI16, DType::kU16}) {
    SCOPED_TRACE(std::string(DTypeName(dtype)));
    const bool is_signed = dtype == DType::kI8 || dtype == DType::kI16;
    const int32_t max = dtype == DType::kI8 || dtype == DType::kU8 ? 255 : 65535;
    const std::vector<int32_t> codes =
        is_signed ? std::vector<int32_t>{-(max + 1) / 2, -1, 0, max / 2}
                  : std::vector<int32_t>{0, 1, max / 2, max};
    std::vector<uint8_t> bytes(8);
    WriteCodes(dtype, codes.data(), 4, bytes.data());
    std::vector<int32_t> back(4);
    ReadCodes(dtype, bytes.data(), 0, 4, back.data());
    EXPECT_EQ(back, codes);
  }
  EXPECT_TRUE(IsCodeType(DType::kU4));
  EXPECT_FALSE(IsCodeType(DType::kQ4_0));
}

}  // namespace
}  // namespace kite
