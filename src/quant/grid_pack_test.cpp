#include "quant/grid_pack.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "quant/algo_fixture.h"
#include "quant/gptq.h"
#include "tensor/dequantize.h"
#include "tensor/quantize.h"

namespace kite {
namespace {

// GPTQ's codes and scales packed as the ggml type decode to exactly GPTQ's values, and RTN's
// codes packed give ggml's own quantizer's bytes (but for a rounding tie).
TEST(GridPackTest, GptqCodesDecodeToGptqValues) {
  const testing::OutlierLayer l = testing::MakeOutlierLayer(8, 64, 128, 12);
  for (auto [name, dtype] : {std::pair{"q4_0", DType::kQ4_0}, std::pair{"q4_1", DType::kQ4_1},
                             std::pair{"q5_0", DType::kQ5_0}, std::pair{"q5_1", DType::kQ5_1},
                             std::pair{"q8_0", DType::kQ8_0}}) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(PackableOnGgml(dtype));
    auto grid = MakeWeightGrid(name);
    auto q = Gptq("w", l.w, l.out, l.stats, **grid, {.act_order = true}, nullptr);
    ASSERT_TRUE(q);
    auto bytes = PackOnGgml(dtype, q->codes, q->scales, l.out, l.in);
    ASSERT_TRUE(bytes) << bytes.error().message;
    std::vector<float> decoded(l.out * l.in);
    ASSERT_TRUE(Dequantize(dtype, bytes->data(), decoded.data(), l.out * l.in));
    for (size_t i = 0; i < decoded.size(); ++i) ASSERT_EQ(decoded[i], q->weight[i]) << i;

    // RTN: codes from the grid fitted per block, packed; ggml quantizes the same row.
    std::vector<int32_t> codes(l.in);
    std::vector<GroupScale> scales(l.in / 32);
    for (int64_t b = 0; b < l.in / 32; ++b) {
      scales[b] = (*grid)->Fit(std::span(l.w).subspan(b * 32, 32), 1.0f);
      for (int j = 0; j < 32; ++j) codes[b * 32 + j] = (*grid)->Code(scales[b], l.w[b * 32 + j]);
    }
    auto ours = PackOnGgml(dtype, codes, scales, 1, l.in);
    ASSERT_TRUE(ours);
    std::vector<uint8_t> ggml(ours->size());
    ASSERT_TRUE(Quantize(dtype, l.w.data(), ggml.data(), l.in));
    int differ = 0;
    for (size_t i = 0; i < ggml.size(); ++i) differ += ggml[i] != (*ours)[i];
    EXPECT_LE(differ, 1);
  }
}

TEST(GridPackTest, RefusesCodesOutOfRange) {
  std::vector<int32_t> codes(32, 0);
  codes[7] = 16;
  const std::vector<GroupScale> scales(1, GroupScale{.scale = 1.0f, .offset = -8.0f});
  auto bytes = PackOnGgml(DType::kQ4_0, codes, scales, 1, 32);
  ASSERT_FALSE(bytes);
  EXPECT_NE(bytes.error().message.find("code 16 at element 7"), std::string::npos);
  EXPECT_FALSE(PackableOnGgml(DType::kQ4_K));
}

}  // namespace
}  // namespace kite
