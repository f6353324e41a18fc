#include "quant/weight_grid.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "quant/algo_fixture.h"
#include "tensor/dequantize.h"
#include "tensor/quantize.h"

namespace kite {
namespace {

// The q4_0 / q8_0 / q4_1 grids are the ggml formats' values: a row fake-quantized by the grid
// equals the row quantized by tensor/quantize.h and dequantized.
TEST(WeightGridTest, LegacyGridsMatchTheGgmlFormats) {
  testing::Gaussian g(7);
  std::vector<float> row(256);
  for (float& x : row) x = g();
  row[40] = 9.0f;
  row[100] = -7.5f;
  for (auto [name, dtype] : {std::pair{"q4_0", DType::kQ4_0}, std::pair{"q8_0", DType::kQ8_0},
                             std::pair{"q4_1", DType::kQ4_1}}) {
    auto grid = MakeWeightGrid(name);
    ASSERT_TRUE(grid) << grid.error().message;
    std::vector<uint8_t> bytes(*BytesFor(dtype, 256));
    ASSERT_TRUE(Quantize(dtype, row.data(), bytes.data(), 256));
    std::vector<float> ggml(256);
    ASSERT_TRUE(Dequantize(dtype, bytes.data(), ggml.data(), 256));
    std::vector<float> ours = row;
    (*grid)->QuantizeRow(ours);
    int differ = 0;
    for (int i = 0; i < 256; ++i)
      differ += std::fabs(ours[i] - ggml[i]) > 1e-6f * (1 + std::fabs(ggml[i]));
    // ggml rounds x/d + zero by truncating x/d + zero + 0.5 (ties away from the zero point):
    // only a tie may differ.
    EXPECT_LE(differ, 2) << name;
  }
}

// Values a grid gave fake-quantize to themselves (the algorithms hand their output to the
// formats' own round to nearest, which refits the scales), and so do values clamped to a clip.
TEST(WeightGridTest, ValuesOnTheGridStayThere) {
  testing::Gaussian g(3);
  std::vector<float> row(128);
  for (float& x : row) x = g();
  row[9] = -6.0f;
  for (const char* name :
       {"int8", "int4", "int4_asym", "int4_g32", "int4_g64_asym", "q4_0", "q8_0", "q4_k"}) {
    auto grid = MakeWeightGrid(name);
    ASSERT_TRUE(grid);
    std::vector<float> once = row;
    (*grid)->QuantizeRow(once);
    std::vector<float> twice = once;
    (*grid)->QuantizeRow(twice);
    EXPECT_EQ(once, twice) << name;
    const int64_t n = (*grid)->GroupColumns(128);
    std::vector<float> clipped = row, direct = row;
    (*grid)->QuantizeRow(direct, 0.7f);
    for (int64_t b = 0; b < 128; b += n) {
      const GroupScale s = (*grid)->Fit(std::span(row).subspan(b, n), 0.7f);
      for (int64_t j = b; j < b + n; ++j) clipped[j] = (*grid)->Clamp(s, row[j]);
    }
    (*grid)->QuantizeRow(clipped);
    for (int j = 0; j < 128; ++j) EXPECT_NEAR(clipped[j], direct[j], 1e-6f) << name << " " << j;
  }
}

TEST(WeightGridTest, SymmetricAndAsymmetricIntGrids) {
  auto sym = MakeWeightGrid("int4");
  ASSERT_TRUE(sym);
  std::vector<float> row = {-1.4f, 0.7f, 0.1f, 0.0f};
  (*sym)->QuantizeRow(row);
  // scale = 1.4 / 7 = 0.2: values -1.4, 0.8 (0.7 / 0.2 = 3.5 rounds up), 0.2, 0.
  EXPECT_FLOAT_EQ(row[0], -1.4f);
  EXPECT_NEAR(row[1], 0.8f, 1e-6);
  EXPECT_NEAR(row[2], 0.2f, 1e-6);
  EXPECT_EQ(row[3], 0.0f);
  auto asym = MakeWeightGrid("int4_asym");
  ASSERT_TRUE(asym);
  std::vector<float> positive = {1.0f, 2.5f, 4.0f};
  const GroupScale s = (*asym)->Fit(positive, 1.0f);
  // The range [0, 4] (zero included) over 15 steps; zero point 0.
  EXPECT_FLOAT_EQ(s.scale, 4.0f / 15.0f);
  EXPECT_EQ(s.offset, 0.0f);
  EXPECT_EQ((*asym)->Code(s, 4.0f), 15);
  EXPECT_EQ((*asym)->Code(s, -3.0f), 0);  // clamped
  // A clip of 0.5 halves the range.
  EXPECT_FLOAT_EQ((*asym)->Fit(positive, 0.5f).scale, 2.0f / 15.0f);
  // An all-zero group stays zero.
  std::vector<float> zeros(32, 0.0f);
  (*MakeWeightGrid("int4_g32"))->QuantizeRow(zeros);
  for (float z : zeros) EXPECT_EQ(z, 0.0f);
}

TEST(WeightGridTest, ErrorsNameTheGridAndTheWeight) {
  auto unknown = MakeWeightGrid("int3");
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().message.find("'int3'"), std::string::npos);
  EXPECT_NE(unknown.error().message.find("q4_0"), std::string::npos);
  auto grid = MakeWeightGrid("int4_g32");
  const Status columns = (*grid)->CheckColumns(48);
  ASSERT_FALSE(columns);
  EXPECT_NE(columns.error().message.find("48"), std::string::npos);
  std::vector<float> w = {1.0f, NAN, 0.0f, 2.0f};
  const Status bad = CheckWeight("blk.0.attn_q.weight", w, 2, 2);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("blk.0.attn_q.weight"), std::string::npos);
  EXPECT_NE(bad.error().message.find("[0, 1]"), std::string::npos);
}

}  // namespace
}  // namespace kite
