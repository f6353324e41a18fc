// Quantize→Dequantize round trips on random and awkward inputs, held to per-type error bounds
// derived from each type's step size, and the ordering of RMS errors by bit width.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "tensor/dequantize.h"
#include "tensor/quant_blocks.h"
#include "tensor/quantize.h"

namespace kite {
namespace {
std::vector<float> RoundTrip(DType dtype, const std::vector<float>& x) {
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<uint8_t> bytes(*BytesFor(dtype, n));
  const Status quantized = Quantize(dtype, x.data(), bytes.data(), n);
  EXPECT_TRUE(quantized.has_value()) << quantized.error().message;
  std::vector<float> y(x.size(), std::numeric_limits<float>::quiet_NaN());
  const Status status = Dequantize(dtype, bytes.data(), y.data(), static_cast<int64_t>(x.size()));
  EXPECT_TRUE(status.has_value()) << status.error().message;
  return y;
}

constexpr float kF16Rel = 1.0f / 2048;      // rounding to an F16 moves a normal value by <= 2^-11
constexpr float kF16Abs = 1.0f / 33554432;  // ... and a subnormal one by <= 2^-25
constexpr float kF16Up = 1.0f / 1024;       // rounding up to an F16: < one spacing, 2^-10
constexpr float kF16Spacing = 1.0f / 16777216;  // spacing of the F16 subnormals, 2^-24

// Bounds for one asymmetric k-quant super-block (x ≈ d*sc*q - dmin*m, q <= max_q, sc and
// m <= max_code, sub-blocks of sub_size). With M_j = max(0, -min_j) the offset sub-block j
// needs and R_j = max_j + M_j its span:
//   dmin <= max_j M_j / max_code, rounded up to an F16 (Dm),
//   the quantized offset is within Dm/2 of M_j, so the top code must reach R_j + Dm/2,
//   d <= max_j (R_j + Dm/2) / max_q / max_code, rounded up (D),
//   the sub-block step d*sc exceeds (R_j + Dm/2)/max_q by less than one unit D,
//   |error| <= step/2 (rounding) + Dm/2 (the bottom of a sub-block whose offset came out short).
void AsymmetricBounds(const float* x, int sub_size, int max_code, int max_q, float* bound) {
  const int subs = kQKK / sub_size;
  std::vector<float> span(subs), offset(subs);
  float max_offset = 0.0f;
  for (int j = 0; j < subs; ++j) {
    const auto [lo, hi] = std::minmax_element(x + j * sub_size, x + (j + 1) * sub_size);
    offset[j] = std::max(0.0f, -*lo);
    span[j] = *hi + offset[j];
    max_offset = std::max(max_offset, offset[j]);
  }
  const float dmin = max_offset / max_code * (1 + kF16Up) + kF16Spacing;
  float d = 0.0f;
  for (int j = 0; j < subs; ++j) d = std::max(d, (span[j] + dmin / 2) / max_q / max_code);
  d = d * (1 + kF16Up) + kF16Spacing;
  for (int j = 0; j < subs; ++j) {
    const float step = (span[j] + dmin / 2) / max_q + d;
    for (int l = 0; l < sub_size; ++l) bound[j * sub_size + l] = step / 2 + dmin / 2;
  }
}

// Bounds for one symmetric k-quant super-block (x ≈ d*sc*q, q in -(top+1)..top, |sc| <=
// max_code, sub-blocks of 16). A step of a_j/(top + 1/2), a_j the sub-block's largest magnitude,
// keeps both ends within rounding reach whichever sign the scale takes; d is at most the largest
// such step / max_code rounded up (D), and the sub-block step exceeds its own by less than D:
//   |error| <= (a_j/(top + 1/2) + D) / 2.
void SymmetricBounds(const float* x, int max_code, int top, float* bound) {
  float a[16];
  float amax = 0.0f;
  for (int j = 0; j < 16; ++j) {
    a[j] = 0.0f;
    for (int l = 0; l < 16; ++l) a[j] = std::max(a[j], std::fabs(x[16 * j + l]));
    amax = std::max(amax, a[j]);
  }
  const float d = amax / (top + 0.5f) / max_code * (1 + kF16Up) + kF16Spacing;
  for (int j = 0; j < 16; ++j) {
    for (int l = 0; l < 16; ++l) bound[16 * j + l] = (a[j] / (top + 0.5f) + d) / 2;
  }
}

// The largest error each element of a block may carry after a round trip through `dtype`.
std::vector<float> ErrorBounds(DType dtype, const float* x) {
  const int size = Traits(dtype).block_size;
  std::vector<float> bound(size);
  float amax = 0.0f, lo = x[0], hi = x[0];
  for (int i = 0; i < size; ++i) {
    amax = std::max(amax, std::fabs(x[i]));
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
  }
  // Symmetric legacy types: d = amax/levels; codes are within half a step except the top one,
  // which clips (x/d up to +levels stores levels - 1): one step; the F16 d adds |q| times its
  // rounding error.
  auto symmetric = [&](float levels) {
    const float d = amax / levels;
    return d + levels * (d * kF16Rel + kF16Abs);
  };
  // Min/max legacy types: d = (max - min)/top, half a step, plus the F16 rounding of d (times
  // the code) and of m.
  auto min_max = [&](float top) {
    const float d = (hi - lo) / top;
    return d / 2 + top * (d * kF16Rel + kF16Abs) + std::fabs(lo) * kF16Rel + kF16Abs;
  };
  switch (dtype) {
    case DType::kF32:
      std::fill(bound.begin(), bound.end(), 0.0f);
      return bound;
    case DType::kF16:
      bound[0] = std::fabs(x[0]) * kF16Rel + kF16Abs;
      return bound;
    case DType::kBF16:
      bound[0] = std::fabs(x[0]) / 256;
      return bound;     // 8 significant bits
    case DType::kQ8_0:  // d = amax/127: half a step plus 127 times the F16 error of d
      std::fill(bound.begin(), bound.end(),
                amax / 127 / 2 + 127 * (amax / 127 * kF16Rel + kF16Abs));
      break;
    case DType::kQ8_K:  // the same with an F32 d
      std::fill(bound.begin(), bound.end(), amax / 127 / 2);
      break;
    case DType::kQ4_0:
      std::fill(bound.begin(), bound.end(), symmetric(8));
      break;
    case DType::kQ5_0:
      std::fill(bound.begin(), bound.end(), symmetric(16));
      break;
    case DType::kQ4_1:
      std::fill(bound.begin(), bound.end(), min_max(15));
      break;
    case DType::kQ5_1:
      std::fill(bound.begin(), bound.end(), min_max(31));
      break;
    case DType::kQ2_K:
      AsymmetricBounds(x, 16, 15, 3, bound.data());
      break;
    case DType::kQ4_K:
      AsymmetricBounds(x, 32, 63, 15, bound.data());
      break;
    case DType::kQ5_K:
      AsymmetricBounds(x, 32, 63, 31, bound.data());
      break;
    case DType::kQ3_K:
      SymmetricBounds(x, 31, 3, bound.data());
      break;
    case DType::kQ6_K:
      SymmetricBounds(x, 127, 31, bound.data());
      break;
    default:
      ADD_FAILURE() << "no bound for " << DTypeName(dtype);
  }
  for (float& b : bound) b += amax * 1e-6f;  // F32 rounding in the arithmetic itself
  return bound;
}

constexpr DType kAllTypes[] = {DType::kF32,  DType::kF16,  DType::kBF16, DType::kQ8_0, DType::kQ4_0,
                               DType::kQ4_1, DType::kQ5_0, DType::kQ5_1, DType::kQ2_K, DType::kQ3_K,
                               DType::kQ4_K, DType::kQ5_K, DType::kQ6_K, DType::kQ8_K};

constexpr int64_t kSuperBlocks = 6;
constexpr int64_t kN = kSuperBlocks * kQKK;

// Named inputs of kN elements.
struct Input {
  std::string name;
  std::vector<float> x;
};

std::vector<Input> MakeInputs(uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  auto fill = [&](std::function<float(int64_t)> f) {
    std::vector<float> x(kN);
    for (int64_t i = 0; i < kN; ++i) x[i] = f(i);
    return x;
  };
  std::vector<Input> inputs;
  inputs.push_back({"gaussian", fill([&](int64_t) { return normal(rng); })});
  std::uniform_real_distribution<float> skewed(-1.0f, 3.0f);
  inputs.push_back({"uniform -1..3", fill([&](int64_t) { return skewed(rng); })});
  std::uniform_real_distribution<float> negative(-5.0f, -1.0f);
  inputs.push_back({"all negative", fill([&](int64_t) { return negative(rng); })});
  // Each block of 32 at its own scale, 1e-3 .. 10.
  std::vector<float> scale(kN / 32);
  std::uniform_real_distribution<float> exponent(-3.0f, 1.0f);
  for (float& s : scale) s = std::pow(10.0f, exponent(rng));
  inputs.push_back({"mixed scales", fill([&](int64_t i) { return scale[i / 32] * normal(rng); })});
  // Every other block of 32 all zero.
  inputs.push_back(
      {"zero blocks", fill([&](int64_t i) { return (i / 32) % 2 ? normal(rng) : 0.0f; })});
  // One element 1000 times the rest in each super-block, at a random place.
  std::vector<float> outliers = fill([&](int64_t) { return normal(rng); });
  for (int64_t b = 0; b < kSuperBlocks; ++b) outliers[b * kQKK + rng() % kQKK] = 1000.0f;
  inputs.push_back({"outlier", outliers});
  // Constant blocks of 32: positive, negative, small, zero, an F16-inexact value.
  const float constants[] = {0.7f, -3.25f, 1e-3f, 0.0f, 1.0f / 3};
  inputs.push_back({"constant", fill([&](int64_t i) { return constants[(i / 32) % 5]; })});
  return inputs;
}

TEST(QuantizeRoundTripTest, RoundTripStaysWithinTheStepBound) {
  for (uint32_t seed : {1u, 2u, 3u}) {
    for (const Input& input : MakeInputs(seed)) {
      for (DType dtype : kAllTypes) {
        const std::vector<float> y = RoundTrip(dtype, input.x);
        const int size = Traits(dtype).block_size;
        int reported = 0;
        for (int64_t b = 0; b < kN / size; ++b) {
          const std::vector<float> bound = ErrorBounds(dtype, input.x.data() + b * size);
          for (int i = 0; i < size; ++i) {
            const int64_t e = b * size + i;
            const float error = std::fabs(y[e] - input.x[e]);
            if (!(error <= bound[i]) && reported++ < 3) {
              ADD_FAILURE() << DTypeName(dtype) << ", " << input.name << ", seed " << seed
                            << ": element " << e << " = " << input.x[e] << " came back as " << y[e]
                            << ", error " << error << " > bound " << bound[i];
            }
          }
        }
      }
    }
  }
}

TEST(QuantizeRoundTripTest, ZeroBlocksStayExactlyZero) {
  for (const Input& input : MakeInputs(7)) {
    for (DType dtype : kAllTypes) {
      const std::vector<float> y = RoundTrip(dtype, input.x);
      for (int64_t b = 0; b < kN / 32; ++b) {
        const bool zero = std::all_of(input.x.begin() + b * 32, input.x.begin() + (b + 1) * 32,
                                      [](float v) { return v == 0.0f; });
        if (!zero) continue;
        for (int64_t e = b * 32; e < (b + 1) * 32; ++e) {
          ASSERT_EQ(y[e], 0.0f) << DTypeName(dtype) << ", " << input.name << ", element " << e;
        }
      }
    }
  }
}

double RmsError(DType dtype, const std::vector<float>& x) {
  const std::vector<float> y = RoundTrip(dtype, x);
  double sum = 0.0;
  for (size_t i = 0; i < x.size(); ++i) sum += (y[i] - x[i]) * static_cast<double>(y[i] - x[i]);
  return std::sqrt(sum / static_cast<double>(x.size()));
}

// On Gaussian weights more bits must mean less error: q8_0 < q6_K < q5_* < q4_* < q3_K < q2_K.
TEST(QuantizeRoundTripTest, RmsErrorFallsWithBits) {
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(64 * kQKK);
  for (float& v : x) v = normal(rng);
  const double q8 = RmsError(DType::kQ8_0, x);
  const double q6 = RmsError(DType::kQ6_K, x);
  const double q5[] = {RmsError(DType::kQ5_0, x), RmsError(DType::kQ5_1, x),
                       RmsError(DType::kQ5_K, x)};
  const double q4[] = {RmsError(DType::kQ4_0, x), RmsError(DType::kQ4_1, x),
                       RmsError(DType::kQ4_K, x)};
  const double q3 = RmsError(DType::kQ3_K, x);
  const double q2 = RmsError(DType::kQ2_K, x);
  EXPECT_GT(q8, 0.0);
  EXPECT_LT(q8, q6);
  EXPECT_LT(q6, *std::min_element(std::begin(q5), std::end(q5)));
  EXPECT_LT(*std::max_element(std::begin(q5), std::end(q5)),
            *std::min_element(std::begin(q4), std::end(q4)));
  EXPECT_LT(*std::max_element(std::begin(q4), std::end(q4)), q3);
  EXPECT_LT(q3, q2);
  // Rounding to a uniform grid of step s gives an RMS error near s/sqrt(12); 32 Gaussian
  // samples span about ±2.1σ, so q8_0's step is about 2.1/127 and its error near 0.005.
  EXPECT_LT(q8, 0.008);
  EXPECT_LT(q2, 0.5);  // 2 bits with a min: a step of about a third of the range
}

TEST(QuantizeRoundTripTest, WritesExactlyTheBlockBytes) {
  std::vector<float> x(2 * kQKK);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(static_cast<float>(i));
  for (DType dtype : kAllTypes) {
    const uint64_t bytes = *BytesFor(dtype, x.size());
    std::vector<uint8_t> out(bytes + 16, 0xee);
    ASSERT_TRUE(Quantize(dtype, x.data(), out.data(), static_cast<int64_t>(x.size())).has_value());
    for (uint64_t i = bytes; i < out.size(); ++i) ASSERT_EQ(out[i], 0xee) << DTypeName(dtype);
  }
}

}  // namespace
}  // namespace kite
