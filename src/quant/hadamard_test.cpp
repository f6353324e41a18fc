#include "quant/hadamard.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "backends/ref/ref_backend.h"
#include "models/load_model.h"
#include "quant/algo_fixture.h"
#include "runtime/testing.h"
#include "tensor/dequantize.h"

namespace kite {
namespace {

// Q written out: row i is e_i·Q.
std::vector<float> Explicit(const HadamardRotation& r) {
  const int64_t n = r.size();
  std::vector<float> q(n * n, 0.0f);
  for (int64_t i = 0; i < n; ++i) q[i * n + i] = 1.0f;
  r.RotateRows(q);
  return q;
}

// Q·Qᵀ = I for powers of two, Paley orders (I: 12, 20, 24, 44; II: 28, 36) and their products
// with powers of two; RotateColumns is Qᵀ·w.
TEST(HadamardTest, RotationsAreOrthogonal) {
  for (int64_t n : {1, 2, 16, 12, 20, 24, 28, 36, 44, 40, 96, 160, 256}) {
    auto r = HadamardRotation::Make(n, 5, "test size");
    ASSERT_TRUE(r) << n << ": " << r.error().message;
    const std::vector<float> q = Explicit(*r);
    double worst = 0.0;
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double s = 0.0;
        for (int64_t k = 0; k < n; ++k) s += double{q[i * n + k]} * q[j * n + k];
        worst = std::max(worst, std::fabs(s - (i == j ? 1.0 : 0.0)));
      }
    }
    EXPECT_LT(worst, 1e-5) << n;
    if (n > 1) {  // entries ±1/sqrt(n): a Hadamard matrix with signs, not any orthogonal one
      for (float v : q) ASSERT_NEAR(std::fabs(v), 1.0 / std::sqrt(double(n)), 1e-6) << n;
    }
    // Qᵀ·w for w [n, 3].
    testing::Gaussian g(static_cast<uint32_t>(n));
    std::vector<float> w(n * 3);
    for (float& v : w) v = g();
    std::vector<float> rotated = w;
    r->RotateColumns(rotated, 3);
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t c = 0; c < 3; ++c) {
        double s = 0.0;
        for (int64_t k = 0; k < n; ++k) s += double{q[k * n + i]} * w[k * 3 + c];
        ASSERT_NEAR(rotated[i * 3 + c], s, 1e-4) << n;
      }
    }
  }
}

TEST(HadamardTest, RefusesOrdersWithoutAConstructionByName) {
  for (int64_t n : {0, 7, 100, 52 * 3}) {
    auto r = HadamardRotation::Make(n, 0, "hidden size");
    ASSERT_FALSE(r) << n;
    EXPECT_NE(r.error().message.find("order " + std::to_string(n) + " (the hidden size)"),
              std::string::npos)
        << r.error().message;
  }
}

// The claim: rotated, a layer with outlier input channels and an outlier weight loses less to
// 4-bit weights (per channel) and 8-bit per-tensor activations.
TEST(HadamardTest, LowersTheW4A8ErrorOfALayerWithOutliers) {
  const testing::OutlierLayer l = testing::MakeOutlierLayer(32, 128, 128, 8);
  auto r = HadamardRotation::Make(l.in, 1, "test");
  ASSERT_TRUE(r);
  auto error = [&](bool rotate) {
    std::vector<float> x = l.x, w = l.w;
    if (rotate) {
      r->RotateRows(x);  // (x·Q)·(W·Q)ᵀ = x·Wᵀ
      r->RotateRows(w);
    }
    float m = 0.0f;
    for (float v : x) m = std::max(m, std::fabs(v));
    for (float& v : x) v = std::round(v / (m / 127.0f)) * (m / 127.0f);
    w = testing::Rtn(**MakeWeightGrid("int4"), w, l.in);
    return testing::QuantizedLayerError(l, x, w);
  };
  const double plain = error(false), rotated = error(true);
  EXPECT_LT(rotated, 0.5 * plain) << "plain " << plain << " rotated " << rotated;
}

const std::string kReference = KITE_SOURCE_DIR "/testdata/reference/";
const std::vector<int32_t> kTokens = {1, 17, 250, 999, 3, 42, 7, 500, 2, 64, 128, 900, 11};

// Function preserved: RotateModel's model (its own rotated weights, a tied lm_head untied) of
// the reference models (GQA, biases on q/k/v and on every linear, tied embeddings) gives the
// same logits.
TEST(HadamardTest, RotatedModelsComputeTheSameLogits) {
  for (const char* name : {"llama-gqa", "qwen2-bias", "llama-bias-linear", "mistral"}) {
    SCOPED_TRACE(name);
    auto model = LoadModel(kReference + name);
    ASSERT_TRUE(model);
    auto rotated = RotateModel(**model, {.seed = 11});
    ASSERT_TRUE(rotated) << rotated.error().message;
    EXPECT_FALSE((*rotated)->config().tied_embeddings);
    EXPECT_TRUE((*rotated)->Weight("output.weight"));
    // Not an identity: the stream's readers moved.
    std::vector<float> q[2];
    for (int i = 0; i < 2; ++i) {
      const TensorView* w = *(i == 0 ? **model : **rotated).Weight("blk.0.attn_q.weight");
      q[i].resize(w->bytes / BytesFor(w->dtype, 1).value_or(4));
      ASSERT_TRUE(Dequantize(w->dtype, w->data, q[i].data(), static_cast<int64_t>(q[i].size())));
    }
    double moved = 0.0;
    for (size_t i = 0; i < q[0].size(); ++i)
      moved = std::max(moved, std::fabs(double{q[0][i]} - q[1][i]));
    EXPECT_GT(moved, 1e-2);
    const PhaseOptions phase{.tokens = static_cast<int32_t>(kTokens.size()), .all_logits = true};
    RefBackend ref;
    auto before =
        testing::PrefillLogits(*(*model)->BuildGraph(phase), (*model)->config(), {&ref}, kTokens);
    auto after = testing::PrefillLogits(*(*rotated)->BuildGraph(phase), (*rotated)->config(),
                                        {&ref}, kTokens);
    ASSERT_TRUE(before && after);
    double diff = 0.0;
    for (size_t i = 0; i < before->size(); ++i) {
      diff = std::max(diff, std::fabs(double{(*before)[i]} - (*after)[i]));
    }
    EXPECT_LT(diff, 1e-3);
  }
}

TEST(HadamardTest, RotateWeightNamesTheWeight) {
  auto model = LoadModel(kReference + "llama-gqa");
  ASSERT_TRUE(model);
  auto rotation = MakeModelRotation((*model)->config(), {});
  ASSERT_TRUE(rotation);
  auto bad = RotateWeight(**model, *rotation, "blk.0.attn_q.weight", std::vector<float>(10));
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("blk.0.attn_q.weight"), std::string::npos);
  // A norm comes back as ones; a weight the rotation leaves alone, unchanged.
  auto norm = RotateWeight(**model, *rotation, "blk.1.ffn_norm.weight", {2.0f, 3.0f});
  ASSERT_TRUE(norm);
  EXPECT_EQ(*norm, (std::vector<float>{1.0f, 1.0f}));
  auto bias = RotateWeight(**model, *rotation, "blk.0.attn_q.bias", {2.0f, 3.0f});
  ASSERT_TRUE(bias);
  EXPECT_EQ(*bias, (std::vector<float>{2.0f, 3.0f}));
}

}  // namespace
}  // namespace kite
