#include "quant/smoothquant.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>
#include <vector>

#include "backends/ref/ref_backend.h"
#include "graph/passes/pass_manager.h"
#include "models/load_model.h"
#include "quant/algo_fixture.h"
#include "quant/fold_scales.h"
#include "runtime/testing.h"

namespace kite {
namespace {

// Per-tensor symmetric int8 of x (static activation encoding, by its max).
std::vector<float> QuantizeTensorInt8(std::vector<float> x) {
  float m = 0.0f;
  for (float v : x) m = std::max(m, std::fabs(v));
  const float scale = m / 127.0f;
  for (float& v : x) v = std::clamp(std::round(v / scale), -127.0f, 127.0f) * scale;
  return x;
}

// W8A8 output error, ||Qa(X / s) · Qw(W · s)ᵀ - X · Wᵀ||², with s = 1 when empty.
double W8A8Error(const testing::OutlierLayer& l, const std::vector<float>& s) {
  std::vector<float> x = l.x, w = l.w;
  for (int64_t i = 0; i < l.rows * l.in; ++i) x[i] /= s.empty() ? 1.0f : s[i % l.in];
  for (int64_t i = 0; i < l.out * l.in; ++i) w[i] *= s.empty() ? 1.0f : s[i % l.in];
  x = QuantizeTensorInt8(std::move(x));
  w = testing::Rtn(**MakeWeightGrid("int8"), w, l.in);
  return testing::QuantizedLayerError(l, x, w);
}

// The scale is the paper's formula, and it cuts the W8A8 error of a layer whose inputs have
// outlier channels (per-tensor activation encodings spend their range on them).
TEST(SmoothQuantTest, LowersTheW8A8ErrorOfALayerWithOutlierChannels) {
  const testing::OutlierLayer l = testing::MakeOutlierLayer(32, 128, 128, 4);
  std::vector<float> weight_max(l.in, 0.0f);
  for (int64_t i = 0; i < l.out * l.in; ++i) {
    weight_max[i % l.in] = std::max(weight_max[i % l.in], std::fabs(l.w[i]));
  }
  const SmoothingSite site{.producer = "norm", .consumers = {"w"}};
  const std::vector<float> s = SmoothingScale(l.stats.abs_max, weight_max, site, 0.5f);
  for (int64_t j : {0, 18, 125}) {
    EXPECT_FLOAT_EQ(s[j], std::sqrt(l.stats.abs_max[j]) / std::sqrt(weight_max[j])) << j;
  }
  const double plain = W8A8Error(l, {}), smoothed = W8A8Error(l, s);
  EXPECT_LT(smoothed, 0.3 * plain) << "plain " << plain << " smoothed " << smoothed;
}

// attn_v -> attn_output: one scale per v channel, from the maxima over every query head's
// column of its KV head.
TEST(SmoothQuantTest, SharesAScaleAcrossTheQueryHeadsOfAKvHead) {
  const SmoothingSite site{.producer = "v", .consumers = {"o"}, .repeat = 2, .head_dim = 2};
  // 4 query heads of 2 over 2 KV heads: columns 0-1, 2-3 -> channels 0-1; 4-5, 6-7 -> 2-3.
  const std::vector<float> x = {1, 4, 9, 1, 16, 1, 1, 1};
  const std::vector<float> w = {1, 1, 1, 4, 1, 1, 1, 1};
  const std::vector<float> s = SmoothingScale(x, w, site, 0.5f);
  ASSERT_EQ(s.size(), 4u);
  EXPECT_FLOAT_EQ(s[0], 3.0f);         // sqrt(max(1, 9)) / sqrt(max(1, 1))
  EXPECT_FLOAT_EQ(s[1], 2.0f / 2.0f);  // sqrt(max(4, 1)) / sqrt(max(1, 4))
  EXPECT_FLOAT_EQ(s[2], 4.0f);
  EXPECT_FLOAT_EQ(s[3], 1.0f);
}

const std::string kReference = KITE_SOURCE_DIR "/testdata/reference/";
const std::vector<int32_t> kTokens = {1, 17, 250, 999, 3, 42, 7, 500, 2, 64, 128, 900, 11};

// Statistics as calibration would give them: per linear input, a max per channel in [0.1, 5)
// with every 16th channel 60x larger.
CalibrationStats FakeStats(const Model& model) {
  CalibrationStats stats;
  std::mt19937 rng(2);
  std::uniform_real_distribution<float> dist(0.1f, 5.0f);
  for (int32_t layer = 0; layer <= model.config().n_layers; ++layer) {
    for (const SmoothingSite& site : LlamaSmoothingSites(model.config(), layer)) {
      const TensorView* w = *model.Weight(site.consumers[0]);
      LinearInputStats& s = stats.linears[site.consumers[0]];
      s.abs_max.resize(w->shape[1]);
      for (size_t j = 0; j < s.abs_max.size(); ++j) s.abs_max[j] = dist(rng) * (j % 16 ? 1 : 60);
    }
  }
  return stats;
}

// Every site of every block and the head, folded: the logits do not move; FoldScales hands
// back exactly the weights the sites touch.
TEST(SmoothQuantTest, EverySiteFoldsWithoutChangingTheModel) {
  for (const char* name : {"llama-gqa", "qwen2-bias"}) {
    SCOPED_TRACE(name);
    auto model = LoadModel(kReference + name);
    ASSERT_TRUE(model) << model.error().message;
    const CalibrationStats stats = FakeStats(**model);
    std::vector<ChannelScale> scales;
    for (int32_t layer = 0; layer <= (*model)->config().n_layers; ++layer) {
      auto site_scales = SmoothQuantScales(**model, layer, stats, {.alpha = 0.5f});
      ASSERT_TRUE(site_scales) << site_scales.error().message;
      scales.insert(scales.end(), site_scales->begin(), site_scales->end());
    }
    auto graph =
        (*model)->BuildGraph({.tokens = static_cast<int32_t>(kTokens.size()), .all_logits = true});
    ASSERT_TRUE(graph);
    WeightStore store;
    PassManager passes;
    passes.Add(std::make_unique<FoldChannelScale>(&store, scales));
    auto folded = passes.Run(graph->Copy(), nullptr);
    ASSERT_TRUE(folded) << folded.error().message;
    RefBackend ref;
    auto before = testing::PrefillLogits(std::move(*graph), (*model)->config(), {&ref}, kTokens);
    auto after = testing::PrefillLogits(std::move(*folded), (*model)->config(), {&ref}, kTokens);
    ASSERT_TRUE(before && after);
    double diff = 0;
    for (size_t i = 0; i < before->size(); ++i) {
      diff = std::max(diff, std::fabs(double{(*before)[i]} - (*after)[i]));
    }
    EXPECT_LT(diff, 1e-3);

    auto weights = FoldScales(**model, scales);
    ASSERT_TRUE(weights) << weights.error().message;
    std::set<std::string> names;
    for (const auto& [n, values] : *weights) names.insert(n);
    EXPECT_TRUE(names.contains("blk.0.attn_norm.weight"));
    EXPECT_TRUE(names.contains("blk.0.attn_v.weight"));
    EXPECT_TRUE(names.contains("blk.0.attn_output.weight"));
    EXPECT_TRUE(names.contains("blk.0.ffn_down.weight"));
    EXPECT_TRUE(names.contains("output.weight"));
    EXPECT_EQ(names.contains("blk.0.attn_v.bias"), std::string(name) == "qwen2-bias");
    // Per block 4 producers (2 norms, v, up) and 6 consumers, v counted once; the head's 2.
    const size_t per_block = 9 + (std::string(name) == "qwen2-bias" ? 1 : 0);
    EXPECT_EQ(names.size(), per_block * (*model)->config().n_layers + 2);
  }
}

TEST(SmoothQuantTest, ErrorsNameTheSite) {
  auto model = LoadModel(kReference + "llama-gqa");
  ASSERT_TRUE(model);
  auto missing = SmoothQuantScales(**model, 0, CalibrationStats{}, {});
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("blk.0.attn_norm"), std::string::npos);
  EXPECT_NE(missing.error().message.find("blk.0.attn_q.weight"), std::string::npos);
  auto alpha = SmoothQuantScales(**model, 0, FakeStats(**model), {.alpha = 1.5f});
  ASSERT_FALSE(alpha);
  EXPECT_NE(alpha.error().message.find("1.5"), std::string::npos);
}

}  // namespace
}  // namespace kite
