#include "quant/activation_encodings.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace kite {
namespace {

ActivationStats StatsOf(const std::vector<float>& values, int32_t bins = 2048) {
  ActivationStats stats;
  AccumulateActivation(values, bins, stats);
  return stats;
}

// Mean squared error of quantize -> dequantize of `values` under `e`.
double QdqError(const std::vector<float>& values, const QuantEncoding& e) {
  double error = 0;
  for (float v : values) {
    const int32_t q = QuantizeValue(v, e.scales[0], e.offsets[0], e.q_min(), e.q_max());
    const double d = DequantizeValue(q, e.scales[0], e.offsets[0]) - double{v};
    error += d * d;
  }
  return error / values.size();
}

TEST(ActivationEncodings, MinMaxSpansTheRangeWithZeroExact) {
  auto e = EncodeActivation(StatsOf({-1.0f, 0.5f, 3.0f}), 8, {}, "a");
  ASSERT_TRUE(e.has_value()) << e.error().message;
  EXPECT_FALSE(e->is_signed);
  EXPECT_EQ(e->bits, 8);
  EXPECT_FLOAT_EQ(e->scales[0], 4.0f / 255);
  EXPECT_EQ(e->offsets[0], -64);  // round(-1 / (4 / 255)) = round(-63.75)
  // An all-positive range still holds 0 (offset 0); 16 bits spans it in 65535 steps.
  auto positive = EncodeActivation(StatsOf({2.0f, 5.0f}), 16, {}, "b");
  ASSERT_TRUE(positive.has_value());
  EXPECT_EQ(positive->offsets[0], 0);
  EXPECT_FLOAT_EQ(positive->scales[0], 5.0f / 65535);
  EXPECT_TRUE(ValidateEncoding(*positive, std::vector<int64_t>{1}, DType::kU16).has_value());
}

TEST(ActivationEncodings, ClippingMethodsBeatMinMaxOnHeavyTails) {
  // Gaussian values with a few huge outliers: min-max wastes its steps on the outliers.
  std::mt19937 random(3);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> values(100000);
  for (float& v : values) v = normal(random);
  values[10] = 400.0f;
  values[20] = -300.0f;
  const ActivationStats stats = StatsOf(values);
  auto minmax = EncodeActivation(stats, 8, {.method = EncodingMethod::kMinMax}, "x");
  auto percentile =
      EncodeActivation(stats, 8, {.method = EncodingMethod::kPercentile, .percentile = 99.9}, "x");
  auto mse = EncodeActivation(stats, 8, {.method = EncodingMethod::kMse}, "x");
  auto sqnr = EncodeActivation(stats, 8, {.method = EncodingMethod::kSqnr}, "x");
  ASSERT_TRUE(minmax && percentile && mse && sqnr);
  const double e_minmax = QdqError(values, *minmax);
  // Percentile gives up the two outliers for the bulk: the values within 3 sigma come out far
  // better than under min-max.
  std::vector<float> bulk;
  for (float v : values) {
    if (std::abs(v) < 3.0f) bulk.push_back(v);
  }
  EXPECT_LT(QdqError(bulk, *percentile), 0.1 * QdqError(bulk, *minmax));
  // MSE and SQNR weigh everything, outliers included, and still beat min-max.
  EXPECT_LT(QdqError(values, *mse), e_minmax);
  EXPECT_LT(QdqError(values, *sqnr), e_minmax);
  // The percentile range ends near the 99.9th percentile of a unit normal (3.29).
  const float percentile_hi = percentile->scales[0] * (255 + percentile->offsets[0]);
  EXPECT_NEAR(percentile_hi, 3.29f, 0.3f);
  // SQNR weighs clipping more: its range is at least MSE's.
  EXPECT_GE(sqnr->scales[0], mse->scales[0]);
}

TEST(ActivationEncodings, KvNodesTakeTheKvWidth) {
  CalibrationStats stats;
  stats.activations["blk.0.rope_k"] = StatsOf({-2.0f, 2.0f});
  stats.activations["blk.0.attn_v"] = StatsOf({-1.0f, 1.0f});
  stats.activations["blk.0.attn_q"] = StatsOf({-1.0f, 1.0f});
  auto encodings = ChooseActivationEncodings(stats, {.bits = 16, .kv_bits = 8});
  ASSERT_TRUE(encodings.has_value()) << encodings.error().message;
  EXPECT_EQ(encodings->by_node.at("blk.0.rope_k").bits, 8);
  EXPECT_EQ(encodings->by_node.at("blk.0.attn_v").bits, 8);
  EXPECT_EQ(encodings->by_node.at("blk.0.attn_q").bits, 16);
  EXPECT_EQ(encodings->method, "minmax");
  auto bad = ChooseActivationEncodings(stats, {.bits = 4});
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message.find("--act-bits 4, expected 8 or 16"), std::string::npos);
}

TEST(ActivationEncodings, ParsesTheMethods) {
  EXPECT_EQ(ParseEncodingMethod("sqnr")->method, EncodingMethod::kSqnr);
  auto p = ParseEncodingMethod("percentile:99.9");
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->percentile, 99.9);
  EXPECT_EQ(EncodingMethodName(*p), "percentile:99.9");
  EXPECT_EQ(ParseEncodingMethod("percentile")->percentile, 99.99);
  EXPECT_FALSE(ParseEncodingMethod("percentile:20").has_value());
  auto unknown = ParseEncodingMethod("entropy");
  ASSERT_FALSE(unknown.has_value());
  EXPECT_NE(unknown.error().message.find("expected one of minmax"), std::string::npos);
}

TEST(ActivationEncodings, RoundTripThroughGgufKeys) {
  CalibrationStats stats;
  stats.activations["blk.0.attn_norm"] = StatsOf({-3.0f, 7.0f});
  stats.activations["blk.0.rope_k"] = StatsOf({-0.5f, 0.25f});
  const ActivationEncodings encodings =
      *ChooseActivationEncodings(stats, {.bits = 16, .kv_bits = 8});
  GgufWriter writer;
  ASSERT_TRUE(WriteActivationEncodingKeys(encodings, writer).has_value());
  auto bytes = writer.Serialize();
  ASSERT_TRUE(bytes.has_value());
  auto file = GgufFile::Parse(*bytes, "mem.gguf");
  ASSERT_TRUE(file.has_value()) << file.error().message;
  auto read = ReadActivationEncodingKeys(*file);
  ASSERT_TRUE(read.has_value()) << read.error().message;
  EXPECT_EQ(read->by_node, encodings.by_node);
  EXPECT_EQ(read->bits, 16);
  EXPECT_EQ(read->kv_bits, 8);
  EXPECT_EQ(read->method, "minmax");

  GgufWriter bad;
  ASSERT_TRUE(WriteActivationEncodingKeys(encodings, bad).has_value());
  bad.SetValue("kite.activations.scales",
               GgufValue{GgufValue::Array{GgufType::kFloat32, {GgufValue{1.0f}}}});
  auto bad_bytes = bad.Serialize();
  auto bad_file = GgufFile::Parse(*bad_bytes, "bad.gguf");
  ASSERT_TRUE(bad_file.has_value());
  auto refused = ReadActivationEncodingKeys(*bad_file);
  ASSERT_FALSE(refused.has_value());
  EXPECT_NE(refused.error().message.find("bad.gguf: kite.activations.scales holds 1 values"),
            std::string::npos)
      << refused.error().message;
}

}  // namespace
}  // namespace kite
