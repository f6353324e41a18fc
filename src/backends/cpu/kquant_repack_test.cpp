// The k-quant repacking's arithmetic against the tensor layer's dequantizer (itself checked
// against llama.cpp's): every weight, formed as the kernels form it from the repacked scales
// (f32 d·scale, times the code, plus -dmin·min), is ggml's to the last bit of one rounding, and
// a super-block whose d·scale is past the f16 range packs (it is an f32 product, as in ggml).
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
        const SubBlockScales scales = ScalesOfSubBlock(super, sub, *layout);
        for (int e = 0; e < kQK; ++e) {
          const int code = super.codes[kQK * sub + e];
          const float q = layout->levels != nullptr ? layout->levels[code] : code - layout->zero;
          const bool second_half = layout->half_scales && e >= kQK / 2;
          const float d = super.d * (second_half ? scales.second : scales.scale);
          const float m = layout->has_min ? -super.dmin * scales.second : 0.0f;
          const float expected = w[b * kQKK + sub * kQK + e];
          // d·q + m, rounded once more at most where a compiler fuses the two into an FMA.
          const float allowed = std::ldexp(std::abs(d * q) + std::abs(m), -23);
          ASSERT_NEAR(d * q + m, expected, allowed)
              << "super-block " << b << " element " << sub * kQK + e;
        }
      }
    }
  }
}

TEST(KQuantRepackTest, AScaleProductPastTheF16RangePacksAsTheFileHasIt) {
  // One row of a q4_K super-block with d = 65504 and sub-block 1's scale 63: d·63 is past
  // 65504, which an f16 per block of 32 could not hold; the int8 scale under the f16 d can.
  std::vector<BlockQ4_K> blocks(1);
  blocks[0].d = F32ToF16(65504.0f);
  blocks[0].scales[1] = 63;
  const auto packed = PackedMatrix::Pack(DType::kQ4_K, blocks.data(), 1, kQKK);
  ASSERT_TRUE(packed.has_value()) << packed.error().message;
  const PackLayout& l = packed->layout();
  const auto* group = reinterpret_cast<const uint8_t*>(packed->group(0));
  EXPECT_EQ(F16ToF32(static_cast<uint16_t>(group[0] | group[1] << 8)), 65504.0f);  // row 0's d
  // Block 1's scale of row 0, after its 256 bytes of codes.
  EXPECT_EQ(static_cast<int8_t>(group[l.BlockOffset(1) + 256]), 63);
}

}  // namespace
}  // namespace kite::cpu
