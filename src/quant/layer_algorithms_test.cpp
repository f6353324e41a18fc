#include "quant/layer_algorithms.h"

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

const std::string kReference = KITE_SOURCE_DIR "/testdata/reference/";
const std::vector<int32_t> kTokens = {1, 17, 250, 999, 3, 42, 7, 500, 2, 64, 128, 900, 11};

// Statistics of every linear of `layer` as calibration gives them: per site one input (48 rows,
// every 8th channel 60x), shared by the site's consumers.
CalibrationStats FakeStats(const Model& model, int32_t layer) {
  CalibrationStats stats;
  uint32_t seed = 100;
  for (const SmoothingSite& site : LlamaSmoothingSites(model.config(), layer)) {
    const int64_t in = (*model.Weight(site.consumers[0]))->shape[1];
    constexpr int64_t kRows = 48;
    testing::Gaussian g(seed++);
    std::vector<float> x(kRows * in);
    for (int64_t i = 0; i < kRows * in; ++i) x[i] = g() * ((i % in) % 8 == 0 ? 60.0f : 1.0f);
    for (const std::string& name : site.consumers)
      stats.linears[name] = testing::StatsOf(x, kRows, in);
  }
  return stats;
}

double MaxLogitDiff(const Model& a, const Model& b) {
  const PhaseOptions phase{.tokens = static_cast<int32_t>(kTokens.size()), .all_logits = true};
  RefBackend ref;
  auto x = testing::PrefillLogits(*a.BuildGraph(phase), a.config(), {&ref}, kTokens);
  auto y = testing::PrefillLogits(*b.BuildGraph(phase), b.config(), {&ref}, kTokens);
  EXPECT_TRUE(x && y);
  double diff = 0.0;
  for (size_t i = 0; x && y && i < x->size(); ++i)
    diff = std::max(diff, std::fabs(double{(*x)[i]} - (*y)[i]));
  return diff;
}

GridForWeight NoGrid() {
  return [](const std::string&) -> Result<std::unique_ptr<WeightGrid>> { return nullptr; };
}
GridForWeight Grid(const char* name) {
  return [name](const std::string&) { return MakeWeightGrid(name); };
}

// With no grid to quantize onto, SmoothQuant's and AWQ's scales only fold: every block and the
// head (tied lm_head included) rescaled, the model computes the same.
TEST(QuantizeLayerTest, ScalesAloneLeaveTheModelUnchanged) {
  for (const char* name : {"llama-gqa", "qwen2-bias"}) {
    SCOPED_TRACE(name);
    auto model = LoadModel(kReference + name);
    ASSERT_TRUE(model);
    FoldedWeights all;
    for (int32_t layer = 0; layer <= (*model)->config().n_layers; ++layer) {
      auto w = QuantizeLayer(**model, layer, FakeStats(**model, layer), {.smoothquant = true},
                             NoGrid(), nullptr);
      ASSERT_TRUE(w) << w.error().message;
      all.merge(w->weights);
    }
    EXPECT_TRUE(all.contains("blk.0.attn_norm.weight"));
    EXPECT_TRUE(all.contains("blk.1.ffn_down.weight"));
    auto changed = WithWeights(**model, all);
    ASSERT_TRUE(changed) << changed.error().message;
    EXPECT_LT(MaxLogitDiff(**model, **changed), 1e-3);
  }
}

std::vector<float> Floats(const Model& model, const std::string& name) {
  const TensorView* t = *model.Weight(name);
  int64_t n = 1;
  for (int64_t d : t->shape) n *= d;
  std::vector<float> v(n);
  EXPECT_TRUE(Dequantize(t->dtype, t->data, v.data(), static_cast<int64_t>(v.size())));
  return v;
}

// Scales and a grid: every linear of the block comes back, the norms folded; and the linears
// behind a norm, their fold undone (s = g / g'), move the outputs on the calibration samples
// less than round to nearest of the original weights. (The statistics are synthetic, so the
// model's logits are no measure here.)
TEST(QuantizeLayerTest, LinearsBehindANormLoseLessThanRoundToNearest) {
  auto model = LoadModel(kReference + "llama3-rope");  // multi-head: AWQ at v -> o too
  ASSERT_TRUE(model);
  ThreadPool pool(2);
  const CalibrationStats stats = FakeStats(**model, 0);
  auto grid = MakeWeightGrid("int4");
  for (const AlgorithmOptions& options :
       {AlgorithmOptions{.gptq = true}, AlgorithmOptions{.smoothquant = true, .gptq = true},
        AlgorithmOptions{.awq = true}, AlgorithmOptions{.awq = true, .gptq = true},
        AlgorithmOptions{.seqmse = true}}) {
    SCOPED_TRACE(std::to_string(options.smoothquant) + std::to_string(options.awq) +
                 std::to_string(options.gptq) + std::to_string(options.seqmse));
    auto w = QuantizeLayer(**model, 0, stats, options, Grid("int4"), &pool);
    ASSERT_TRUE(w) << w.error().message;
    double rtn_total = 0.0, ours_total = 0.0;
    for (const char* linear :
         {"attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"}) {
      const std::string name = std::string("blk.0.") + linear + ".weight";
      ASSERT_TRUE(w->weights.contains(name)) << name;
      const std::vector<float>& q = w->weights.at(name);
      // GPTQ's codes and scales give its values back.
      EXPECT_EQ(w->codes.contains(name), options.gptq) << name;
      if (options.gptq) {
        const GridCodes& c = w->codes.at(name);
        const int64_t columns = (*(*model)->Weight(name))->shape[1];
        const int64_t group = (*grid)->GroupColumns(columns), groups = columns / group;
        for (size_t i = 0; i < q.size(); ++i) {
          const GroupScale& s = c.scales[i / columns * groups + (i % columns) / group];
          ASSERT_EQ((*grid)->Value(s, c.codes[i]), q[i]);
        }
      }
      const int64_t in = (*(*model)->Weight(name))->shape[1];
      const std::string norm =
          std::string("blk.0.") + (linear[0] == 'a' ? "attn_norm.weight" : "ffn_norm.weight");
      // Only the norms' readers that produce no other site (v and up also scale their rows).
      if (std::string(linear) != "attn_q" && std::string(linear) != "attn_k" &&
          std::string(linear) != "ffn_gate") {
        continue;
      }
      const std::vector<float> g = Floats(**model, norm);
      const std::vector<float> g2 = w->weights.contains(norm) ? w->weights.at(norm) : g;
      const std::vector<float> original = Floats(**model, name);
      // AWQ alone leaves clipped floats for the format to round: round them, then undo the fold.
      std::vector<float> effective = options.gptq ? q : testing::Rtn(**grid, q, in);
      for (size_t i = 0; i < q.size(); ++i) effective[i] *= g2[i % in] / g[i % in];
      const LinearInputStats& x = stats.linears.at(name);
      const int64_t out = static_cast<int64_t>(q.size()) / in;
      const double rtn = testing::OutputError(testing::Rtn(**grid, original, in), original, out, in,
                                              x.samples, x.samples_rows);
      const double ours =
          testing::OutputError(effective, original, out, in, x.samples, x.samples_rows);
      rtn_total += rtn;
      ours_total += ours;
    }
    EXPECT_LT(ours_total, rtn_total);
    EXPECT_EQ(w->weights.contains("blk.0.attn_norm.weight"), options.smoothquant || options.awq);
  }
}

TEST(QuantizeLayerTest, ErrorsNameTheWeight) {
  auto model = LoadModel(kReference + "llama-gqa");
  ASSERT_TRUE(model);
  CalibrationStats stats = FakeStats(**model, 0);
  stats.linears.erase("blk.0.ffn_down.weight");
  auto w = QuantizeLayer(**model, 0, stats, {.gptq = true}, Grid("int4"), nullptr);
  ASSERT_FALSE(w);
  EXPECT_NE(w.error().message.find("blk.0.ffn_down.weight"), std::string::npos);
}

}  // namespace
}  // namespace kite
