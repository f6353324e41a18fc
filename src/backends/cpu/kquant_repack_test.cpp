// The k-quant repacking's arithmetic against the tensor layer's dequantizer (itself checked
// against llama.cpp's): every block of 32 holds each weight within the f16 rounding of its
// scale and min, and a scale f16 cannot hold is an error naming its row, never an inf.
#include "backends/cpu/kquant_repack.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "base/half.h"
#include "tensor/dequantize.h"
#include "tensor/quant_blocks.h"
#include "tensor/quantize.h"

namespace kite::cpu {
namespace {

TEST(KQuantRepackTest, BlocksOf32HoldTheDequantizedWeights) {
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (DType dtype : {DType::kQ4_K, DType::kQ5_K, DType::kQ6_K, DType::kIQ4_XS}) {
    SCOPED_TRACE(std::string(DTypeName(dtype)));
    const DTypeRow& row = *FindRow(dtype);
    const auto layout = LayoutOf(dtype);
    ASSERT_TRUE(layout.has_value()) << layout.error().message;
    // Super-blocks of small, unit and large weights, with an outlier, so scales span a range.
    constexpr int kSupers = 6;
    std::vector<float> x(kQKK * kSupers);
    for (size_t i = 0; i < x.size(); ++i) {
      x[i] = normal(rng) * std::pow(10.0f, static_cast<float>(i / kQKK % 3) - 2.0f);
    }
    x[77] *= 8;
    std::vector<uint8_t> bytes(row.block_bytes * kSupers);
    ASSERT_TRUE(Quantize(dtype, x.data(), bytes.data(), x.size()).has_value());
    std::vector<float> w(x.size());
    ASSERT_TRUE(Dequantize(dtype, bytes.data(), w.data(), w.size()).has_value());
    for (int b = 0; b < kSupers; ++b) {
      UnpackedBlock super;
      row.unpack(bytes.data() + b * row.block_bytes, &super);
      for (int sub = 0; sub < kQKK / kQK; ++sub) {
        UnpackedBlock block;
        ASSERT_TRUE(ToLegacyBlock(super, sub, *layout, &block));
        for (int e = 0; e < kQK; ++e) {
          const int code = block.codes[e];
          const float q = layout->levels != nullptr ? layout->levels[code] : code - layout->zero;
          const bool second_half = layout->half_scales && e >= kQK / 2;
          const float d = F16ToF32(second_half ? block.m16 : block.d16);
          const float m = layout->has_min ? F16ToF32(block.m16) : 0.0f;
          const float expected = w[b * kQKK + sub * kQK + e];
          // Each of d·q and m within 2^-11 of itself (f16 rounding of an exact f32 product).
          const float allowed = std::ldexp(std::abs(d * q) + std::abs(m), -11) * 1.001f + 1e-12f;
          ASSERT_NEAR(d * q + m, expected, allowed)
              << "super-block " << b << " element " << sub * kQK + e;
        }
      }
    }
  }
}

TEST(KQuantRepackTest, AScalePastTheF16RangeIsAnErrorNamingItsRow) {
  // Two rows of one q4_K super-block each: row 0 zero, row 1 with d = 65504 and sub-block 1's
  // scale 63 (d·63 is past 65504; sub-block 0's scale is 0).
  std::vector<BlockQ4_K> blocks(2);
  blocks[1].d = F32ToF16(65504.0f);
  blocks[1].scales[1] = 63;
  const auto packed = PackedMatrix::Pack(DType::kQ4_K, blocks.data(), 2, kQKK);
  ASSERT_FALSE(packed.has_value());
  EXPECT_EQ(packed.error().message,
            "cannot pack the q4_K matrix: the scale of row 1, elements 32..63 is past the f16 "
            "range the cpu backend repacks k-quant scales into");
}

}  // namespace
}  // namespace kite::cpu
