// The NPU weight quantizers against a plain reference written from the definitions in
// npu_weights.h (not from the implementation), on random and adversarial weights.
#include "quant/npu_weights.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "tensor/int_codes.h"

namespace kite {
namespace {

// What the definitions say a [n, k] weight becomes.
struct Expected {
  std::vector<int32_t> codes;
  std::vector<float> scales;
  std::vector<int32_t> offsets;
  std::vector<uint8_t> multipliers;
};

float RoundEven(float x) { return std::nearbyint(x); }  // the default mode: ties to even

// x > 0 rounded up to `bits` significant bits: ceil(x / ulp) · ulp.
float RoundUp(float x, int bits) {
  const float ulp = std::ldexp(1.0f, std::ilogb(x) - (bits - 1));
  return std::ceil(x / ulp) * ulp;
}

Expected Reference(const NpuWeightType& t, const std::vector<float>& w, int64_t n, int64_t k) {
  Expected out;
  const int qmax = t.asymmetric ? (1 << t.bits) - 1 : (1 << (t.bits - 1)) - 1;
  const int qmin = t.asymmetric ? 0 : -(1 << (t.bits - 1));
  auto clamp_code = [&](float q) {
    return static_cast<int32_t>(std::min<float>(std::max<float>(q, qmin), qmax));
  };
  // One range [begin, end) of a row under its own scale (per-axis, per-block).
  auto plain_range = [&](const float* r, int64_t len) {
    float scale = 1.0f;
    int32_t offset = 0;
    if (!t.asymmetric) {
      float amax = 0;
      for (int64_t i = 0; i < len; ++i) amax = std::max(amax, std::fabs(r[i]));
      if (amax > 0) scale = RoundUp(amax / static_cast<float>(qmax), 11);
    } else {
      float lo = 0, hi = 0;
      for (int64_t i = 0; i < len; ++i) {
        lo = std::min(lo, r[i]);
        hi = std::max(hi, r[i]);
      }
      const auto s = static_cast<float>((double{hi} - double{lo}) / qmax);
      if (s > 0) {
        scale = s;
        offset = static_cast<int32_t>(RoundEven(lo / scale));
        out.offsets.push_back(offset);
      } else {
        out.offsets.push_back(0);
      }
    }
    out.scales.push_back(scale);
    for (int64_t i = 0; i < len; ++i) {
      out.codes.push_back(clamp_code(RoundEven(r[i] / scale) - static_cast<float>(offset)));
    }
  };
  for (int64_t row = 0; row < n; ++row) {
    const float* r = w.data() + row * k;
    if (t.granularity == EncodingGranularity::kPerAxis) {
      plain_range(r, k);
    } else if (t.granularity == EncodingGranularity::kPerBlock) {
      for (int64_t b = 0; b < k; b += t.block) plain_range(r + b, t.block);
    } else {
      std::vector<float> block_scale;
      for (int64_t b = 0; b < k; b += t.block) {
        float amax = 0;
        for (int64_t i = 0; i < t.block; ++i) amax = std::max(amax, std::fabs(r[b + i]));
        block_scale.push_back(amax / 7.0f);
      }
      float c = *std::max_element(block_scale.begin(), block_scale.end()) / 15.0f;
      if (c > 0) c = RoundUp(c, 7);
      if (c == 0) c = 1;
      out.scales.push_back(c);
      for (size_t b = 0; b < block_scale.size(); ++b) {
        const float m = std::min(15.0f, std::max(1.0f, RoundEven(block_scale[b] / c)));
        out.multipliers.push_back(static_cast<uint8_t>(m));
        for (int64_t i = 0; i < t.block; ++i) {
          out.codes.push_back(clamp_code(RoundEven(r[b * t.block + i] / (c * m))));
        }
      }
    }
  }
  return out;
}

std::vector<float> RandomWeights(int64_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 0.02f);
  std::vector<float> w(count);
  for (float& x : w) x = dist(rng);
  return w;
}

std::vector<int32_t> CodesOf(const QuantizedTensor& q) {
  std::vector<int32_t> codes(q.shape[0] * q.shape[1]);
  ReadCodes(q.dtype, q.bytes.data(), 0, static_cast<int64_t>(codes.size()), codes.data());
  return codes;
}

void ExpectMatchesReference(const NpuWeightType& t, const std::vector<float>& w, int64_t n,
                            int64_t k) {
  SCOPED_TRACE(std::string(t.name));
  const std::vector<int64_t> shape = {n, k};
  const auto q = QuantizeNpuWeight("blk.0.ffn_up.weight", t.name, w, shape);
  ASSERT_TRUE(q.has_value()) << q.error().message;
  ASSERT_TRUE(q->encoding.has_value());
  const QuantEncoding& e = *q->encoding;
  const Expected ref = Reference(t, w, n, k);
  EXPECT_EQ(q->name, "blk.0.ffn_up.weight");
  EXPECT_EQ(q->shape, shape);
  EXPECT_EQ(q->dtype, t.bits == 4 ? (t.asymmetric ? DType::kU4 : DType::kI4)
                                  : (t.asymmetric ? DType::kU8 : DType::kI8));
  EXPECT_EQ(q->bytes.size(), static_cast<size_t>(n * k * t.bits / 8));
  EXPECT_EQ(e.bits, t.bits);
  EXPECT_EQ(e.is_signed, !t.asymmetric);
  EXPECT_EQ(e.granularity, t.granularity);
  EXPECT_EQ(e.axis, 0);
  EXPECT_EQ(e.block_axis, 1);
  EXPECT_EQ(CodesOf(*q), ref.codes);
  EXPECT_EQ(e.scales, ref.scales);
  EXPECT_EQ(e.offsets, ref.offsets);
  EXPECT_EQ(e.multipliers, ref.multipliers);
  EXPECT_TRUE(ValidateEncoding(e, shape, q->dtype).has_value());
}

TEST(NpuWeights, EveryLayoutMatchesTheReferenceOnRandomWeights) {
  const int64_t n = 7, k = 256;
  const std::vector<float> w = RandomWeights(n * k, 1);
  for (const NpuWeightType& t : NpuWeightTypes()) ExpectMatchesReference(t, w, n, k);
}

TEST(NpuWeights, AdversarialRows) {
  const int64_t n = 5, k = 128;
  std::vector<float> w = RandomWeights(n * k, 2);
  std::fill(w.begin() + 1 * k, w.begin() + 2 * k, 0.0f);  // row 1: all zero
  w[2 * k + 17] = 1e30f;                                  // row 2: one huge outlier
  std::fill(w.begin() + 3 * k, w.begin() + 3 * k + 64, 0.0f);  // row 3: a zero half
  for (int64_t i = 0; i < k; ++i) w[4 * k + i] = i % 2 ? 1e-38f : -3e-39f;  // row 4: tiny
  for (const NpuWeightType& t : NpuWeightTypes()) ExpectMatchesReference(t, w, n, k);

  // The zero row is exact, and the outlier survives (it sets its range's scale).
  const auto q = QuantizeNpuWeight("w", "lpbq32", w, std::vector<int64_t>{n, k});
  ASSERT_TRUE(q.has_value());
  const std::vector<int32_t> codes = CodesOf(*q);
  for (int64_t i = 0; i < k; ++i) EXPECT_EQ(codes[k + i], 0);
  EXPECT_EQ(q->encoding->scales[1], 1.0f);
  const float outlier = q->encoding->scales[2] * q->encoding->multipliers[2 * 4] *
                        static_cast<float>(codes[2 * k + 17]);
  // Within the channel scale's rounding up to 7 significant bits (2^-7 relative).
  EXPECT_NEAR(outlier / 1e30f, 1.0f, 1.0f / 128);
}

TEST(NpuWeights, RefusesNonFiniteWeightsNamingTheTensor) {
  std::vector<float> w = RandomWeights(4 * 64, 3);
  w[2 * 64 + 5] = std::numeric_limits<float>::quiet_NaN();
  auto q = QuantizeNpuWeight("blk.3.attn_k.weight", "int8", w, std::vector<int64_t>{4, 64});
  ASSERT_FALSE(q.has_value());
  EXPECT_NE(q.error().message.find("tensor 'blk.3.attn_k.weight': element 133 (row 2, column 5) "
                                   "is NaN"),
            std::string::npos)
      << q.error().message;
  w[2 * 64 + 5] = -std::numeric_limits<float>::infinity();
  q = QuantizeNpuWeight("blk.3.attn_k.weight", "lpbq32", w, std::vector<int64_t>{4, 64});
  ASSERT_FALSE(q.has_value());
  EXPECT_NE(q.error().message.find("'blk.3.attn_k.weight'"), std::string::npos);
  EXPECT_NE(q.error().message.find("is infinite"), std::string::npos);
}

TEST(NpuWeights, RefusesShapesTheLayoutCannotTake) {
  const std::vector<float> w(3 * 48, 0.5f);
  auto message = [&](std::string_view type, std::vector<int64_t> shape,
                     std::vector<float> importance = {}) {
    auto q = QuantizeNpuWeight("t.weight", type, w, shape, importance);
    return q.has_value() ? std::string() : q.error().message;
  };
  EXPECT_NE(message("int4-g32", {3, 48}).find("48 columns are not a multiple of int4-g32's block "
                                              "of 32"),
            std::string::npos);
  EXPECT_NE(message("int4", {48, 3}).find("3 columns is odd"), std::string::npos);
  EXPECT_NE(message("int8", {144}).find("is not a non-empty matrix"), std::string::npos);
  EXPECT_NE(message("int8", {2, 48}).find("144 values for shape [2, 48]"), std::string::npos);
  EXPECT_NE(message("int8", {3, 48}, {1, 2}).find("2 importance weights"), std::string::npos);
  EXPECT_NE(message("q4_0", {3, 48}).find("unknown NPU weight layout 'q4_0'; expected one of "
                                          "int8, int8-asym"),
            std::string::npos);
  EXPECT_EQ(message("int4-g16", {3, 48}).find("lpbq16, lpbq32, lpbq64") != std::string::npos,
            true);
}

// Σ importance · (w - ŵ)² over the whole tensor, decoded through ScaleOffsetAt.
double WeightedError(const QuantizedTensor& q, const std::vector<float>& w,
                     const std::vector<float>& importance) {
  const std::vector<int32_t> codes = CodesOf(q);
  double error = 0;
  for (size_t i = 0; i < w.size(); ++i) {
    const ScaleOffset so = ScaleOffsetAt(*q.encoding, q.shape, static_cast<int64_t>(i));
    const double d = w[i] - static_cast<double>(so.scale) * (codes[i] + so.offset);
    error += (importance.empty() ? 1.0 : importance[i % q.shape[1]]) * d * d;
  }
  return error;
}

TEST(NpuWeights, ClipSearchLowersTheErrorRtnMakes) {
  const int64_t n = 16, k = 128;
  std::vector<float> w = RandomWeights(n * k, 4);
  for (int64_t row = 0; row < n; ++row) w[row * k + (row * 7) % k] = 0.3f;  // an outlier a row
  std::vector<float> importance(k, 1.0f);
  for (int64_t i = 0; i < k; i += 3) importance[i] = 10.0f;
  const std::vector<int64_t> shape = {n, k};
  for (std::string_view type : {"int4", "int4-asym", "int8", "lpbq32", "int4-g128"}) {
    SCOPED_TRACE(std::string(type));
    const auto rtn = QuantizeNpuWeight("w", type, w, shape);
    const auto clipped = QuantizeNpuWeight("w", type, w, shape, {}, {.clip_search = true});
    const auto weighted =
        QuantizeNpuWeight("w", type, w, shape, importance, {.clip_search = true});
    ASSERT_TRUE(rtn && clipped && weighted);
    const double rtn_error = WeightedError(*rtn, w, {});
    const double clip_error = WeightedError(*clipped, w, {});
    EXPECT_LE(clip_error, rtn_error);
    EXPECT_LE(WeightedError(*weighted, w, importance), WeightedError(*rtn, w, importance));
    if (type == "int4") {
      EXPECT_LT(clip_error, 0.9 * rtn_error);  // the outliers cost RTN dearly
    }
  }
}

}  // namespace
}  // namespace kite
