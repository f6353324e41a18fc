#include "graph/passes/fold_channel_scale.h"

#include <gtest/gtest.h>

#include <span>
#include <string>
#include <vector>

#include "graph/builder.h"
#include "graph/testing.h"

namespace kite {
namespace {

using testing::Contains;

std::span<const float> Floats(const Value& weight) {
  return {static_cast<const float*>(weight.data), static_cast<size_t>(weight.elements())};
}

// x [3, 8] -> rms_norm(norm.weight [8]) -> matmuls q (wq [4, 8]) and k (wk [2, 8] + bias), the
// outputs. `extra_reader`: an add reads the norm's output too.
struct Model {
  std::vector<float> norm_weight = {1, 2, 3, 4, 5, 6, 7, 8};
  std::vector<float> wq = std::vector<float>(4 * 8);
  std::vector<float> wk = std::vector<float>(2 * 8);
  std::vector<float> bias = {0.5f, -0.5f};
  Graph graph;

  explicit Model(bool extra_reader = false) {
    for (size_t i = 0; i < wq.size(); ++i) wq[i] = static_cast<float>(i) - 10;
    for (size_t i = 0; i < wk.size(); ++i) wk[i] = static_cast<float>(i) * 0.5f;
    GraphBuilder b;
    const ValueId x = *b.Input("x", DType::kF32, {3, 8});
    const ValueId h = *b.RmsNorm("norm", x, Weight(b, "norm.weight", norm_weight, {8}), 1e-5f);
    EXPECT_TRUE(b.MarkOutput(*b.MatMul("q", h, Weight(b, "wq", wq, {4, 8}))));
    EXPECT_TRUE(
        b.MarkOutput(*b.MatMul("k", h, Weight(b, "wk", wk, {2, 8}), Weight(b, "bk", bias, {2}))));
    if (extra_reader) {
      EXPECT_TRUE(b.MarkOutput(*b.Add("residual", x, h)));
    }
    graph = *std::move(b).Finish();
  }

  static ValueId Weight(GraphBuilder& b, std::string name, const std::vector<float>& data,
                        std::vector<int64_t> shape) {
    return *b.Weight(TensorView{.name = std::move(name),
                                .dtype = DType::kF32,
                                .shape = std::move(shape),
                                .data = data.data(),
                                .bytes = data.size() * sizeof(float),
                                .id = 0});
  }
};

const std::vector<float> kScale = {2, 0.5f, 4, -1, 1, 8, 0.25f, 3};

TEST(FoldChannelScale, ScalesTheNormAndDividesEveryMatmulReadingIt) {
  Model model;
  WeightStore store;
  FoldChannelScale pass(&store, {{.norm = "norm", .scale = kScale}});
  EXPECT_EQ(pass.name(), "fold_channel_scale");
  auto outcome = pass.Run(model.graph);
  ASSERT_TRUE(outcome.has_value()) << outcome.error().message;
  EXPECT_EQ(outcome->changes, 3);  // the norm's weight and two matmuls'
  EXPECT_EQ(outcome->summary, "norm -> 2 matmuls");
  const Graph& g = outcome->graph;
  ASSERT_EQ(g.nodes().size(), 3u);

  const Value& norm_weight = g.value(g.nodes()[0].inputs[1]);
  EXPECT_EQ(norm_weight.name, "norm.weight");
  ASSERT_EQ(norm_weight.dtype, DType::kF32);
  for (size_t k = 0; k < 8; ++k) {
    EXPECT_EQ(Floats(norm_weight)[k], model.norm_weight[k] * kScale[k]) << k;
  }
  const Value& wq = g.value(g.nodes()[1].inputs[1]);
  const Value& wk = g.value(g.nodes()[2].inputs[1]);
  EXPECT_EQ(wq.name, "q.weight");
  EXPECT_EQ(wk.name, "k.weight");
  for (size_t i = 0; i < model.wq.size(); ++i) {
    EXPECT_EQ(Floats(wq)[i], model.wq[i] / kScale[i % 8]) << i;
  }
  for (size_t i = 0; i < model.wk.size(); ++i) {
    EXPECT_EQ(Floats(wk)[i], model.wk[i] / kScale[i % 8]) << i;
  }
  // The bias is the old weight, untouched; the new weights are the store's, under new ids.
  EXPECT_EQ(g.value(g.nodes()[2].inputs[2]).data, model.bias.data());
  for (const Value* w : {&norm_weight, &wq, &wk}) {
    const TensorView* stored = store.Find(w->name);
    ASSERT_NE(stored, nullptr) << w->name;
    EXPECT_EQ(stored->data, w->data);
    EXPECT_EQ(stored->id, w->weight_id);
  }
  EXPECT_NE(wq.weight_id, model.graph.value(model.graph.nodes()[1].inputs[1]).weight_id);
  EXPECT_NE(norm_weight.weight_id, model.graph.value(model.graph.nodes()[0].inputs[1]).weight_id);
  // The source graph still reads the old bytes.
  EXPECT_EQ(model.graph.value(model.graph.nodes()[1].inputs[1]).data, model.wq.data());
}

TEST(FoldChannelScale, RefusesFoldsThatWouldChangeWhatTheGraphComputes) {
  WeightStore store;
  auto error = [&](const Model& model, std::vector<ChannelScale> scales) {
    FoldChannelScale pass(&store, std::move(scales));
    auto outcome = pass.Run(model.graph);
    return outcome ? std::string() : outcome.error().message;
  };
  const Model plain;
  EXPECT_TRUE(Contains(error(plain, {{.norm = "attn_norm", .scale = kScale}}),
                       "norm 'attn_norm': the graph has no rms_norm node of that name"));
  EXPECT_TRUE(Contains(error(plain, {{.norm = "rms", .scale = kScale}}),
                       "no rms_norm node of that name"));
  // A matmul's output channels fold only into the one matmul a known chain leads to.
  EXPECT_TRUE(Contains(error(plain, {{.norm = "q", .scale = kScale}}),
                       "norm 'q': 8 scales for a matmul over 4 channels"));
  EXPECT_TRUE(Contains(error(plain, {{.norm = "q", .scale = {1, 2, 3, 4}}}),
                       "'q' is a graph output, which the fold would change"));
  EXPECT_TRUE(Contains(error(plain, {{.norm = "norm", .scale = {1, 2}}}),
                       "norm 'norm': 2 scales for a norm over 8 channels"));
  std::vector<float> zero = kScale;
  zero[5] = 0;
  EXPECT_TRUE(Contains(error(plain, {{.norm = "norm", .scale = zero}}),
                       "scale 5 is 0.000000, expected finite and non-zero"));
  EXPECT_TRUE(
      Contains(error(plain, {{.norm = "norm", .scale = kScale}, {.norm = "norm", .scale = kScale}}),
               "norm 'norm': given two scales"));
  const Model read_by_add(/*extra_reader=*/true);
  EXPECT_TRUE(Contains(error(read_by_add, {{.norm = "norm", .scale = kScale}}),
                       "node 'residual' (add) reads it other than as a matmul's x"));

  // A matmul weight that cannot be rescaled, behind a norm that can: every fold is checked
  // before any weight is made, so the store stays empty.
  std::vector<std::byte> codes(32);
  GraphBuilder b;
  const ValueId x = *b.Input("x", DType::kF32, {3, 8});
  const ValueId h =
      *b.RmsNorm("norm", x, Model::Weight(b, "norm.weight", plain.norm_weight, {8}), 1e-5f);
  ASSERT_TRUE(b.MarkOutput(*b.MatMul("q", h,
                                     *b.Weight(TensorView{.name = "codes",
                                                          .dtype = DType::kI8,
                                                          .shape = {4, 8},
                                                          .data = codes.data(),
                                                          .bytes = codes.size(),
                                                          .id = 0}))));
  const Graph int8 = *std::move(b).Finish();
  FoldChannelScale pass(&store, {{.norm = "norm", .scale = kScale}});
  auto outcome = pass.Run(int8);
  ASSERT_FALSE(outcome.has_value());
  EXPECT_TRUE(Contains(outcome.error().message,
                       "norm 'norm': weight 'codes' is i8, which cannot be read as floats"));
  EXPECT_EQ(store.weights().size(), 0u);
}

TEST(FoldChannelScale, ScaleColumnsNamesTheWeight) {
  WeightStore store;
  std::vector<std::byte> bytes(64);
  GraphBuilder b;
  const ValueId codes = *b.Weight(TensorView{.name = "codes",
                                             .dtype = DType::kI8,
                                             .shape = {8},
                                             .data = bytes.data(),
                                             .bytes = bytes.size(),
                                             .id = 0});
  auto read = ScaleColumns(store, "codes.scaled", b.value(codes), kScale, false);
  ASSERT_FALSE(read.has_value());
  EXPECT_TRUE(Contains(read.error().message, "weight 'codes'"));
  const ValueId x = *b.Input("x", DType::kF32, {8});
  auto computed = ScaleColumns(store, "x.scaled", b.value(x), kScale, false);
  ASSERT_FALSE(computed.has_value());
  EXPECT_TRUE(Contains(computed.error().message, "weight 'x' is not a weight value"));
  const ValueId w = *b.Weight(TensorView{.name = "w",
                                         .dtype = DType::kF32,
                                         .shape = {2, 4},
                                         .data = bytes.data(),
                                         .bytes = 32,
                                         .id = 0});
  auto short_scale = ScaleColumns(store, "w.scaled", b.value(w), kScale, true);
  ASSERT_FALSE(short_scale.has_value());
  EXPECT_TRUE(Contains(short_scale.error().message,
                       "weight 'w' [2, 4]: 8 scales, expected 4 (its last dim)"));
  EXPECT_EQ(store.weights().size(), 0u);
}

}  // namespace
}  // namespace kite
