#include "graph/passes/pass_manager.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "graph/builder.h"
#include "graph/passes/fold_channel_scale.h"
#include "graph/rewriter.h"
#include "graph/testing.h"

namespace kite {
namespace {

using testing::Contains;

// x [4, 8] -> rms_norm(norm.weight) -> matmul(w [16, 8]) -> silu = output [4, 16].
struct Model {
  std::vector<float> norm_weight = std::vector<float>(8, 1.0f);
  std::vector<float> w = std::vector<float>(16 * 8, 0.5f);
  Graph graph;

  Model() {
    GraphBuilder b;
    const ValueId x = *b.Input("x", DType::kF32, {4, 8});
    const ValueId h =
        *b.RmsNorm("norm", x, *b.Weight(View("norm.weight", norm_weight, {8})), 1e-5f);
    const ValueId y = *b.MatMul("proj", h, *b.Weight(View("w", w, {16, 8})));
    EXPECT_TRUE(b.MarkOutput(*b.Silu("act", y)));
    graph = *std::move(b).Finish();
  }

  static TensorView View(std::string name, const std::vector<float>& data,
                         std::vector<int64_t> shape) {
    return TensorView{.name = std::move(name),
                      .dtype = DType::kF32,
                      .shape = std::move(shape),
                      .data = data.data(),
                      .bytes = data.size() * sizeof(float),
                      .id = 0};
  }
};

// Replaces every silu by a tanh gelu: a pass that changes nodes, not weights.
class SiluToGelu final : public Pass {
 public:
  std::string_view name() const override { return "silu_to_gelu"; }
  Result<PassOutcome> Run(const Graph& graph) override {
    int32_t changes = 0;
    GraphRewriter rw = KITE_TRY(GraphRewriter::Create(graph));
    Graph out = KITE_TRY(std::move(rw).Run(
        [&](GraphRewriter& rw, const Node& node) -> Result<std::optional<ValueId>> {
          if (node.op() != OpKind::kSilu) return std::nullopt;
          ++changes;
          return rw.builder().Gelu(node.name, KITE_TRY(rw.Map(node.inputs[0])), GeluApprox::kTanh);
        }));
    return PassOutcome{.graph = std::move(out), .changes = changes, .summary = ""};
  }
};

// A broken pass: its graph's output is [32], where callers read [4, 16].
class FlattenOutput final : public Pass {
 public:
  std::string_view name() const override { return "flatten_output"; }
  Result<PassOutcome> Run(const Graph&) override {
    GraphBuilder b;
    const ValueId x = KITE_TRY(b.Input("x", DType::kF32, {4, 8}));
    KITE_RETURN_IF_ERROR(b.MarkOutput(KITE_TRY(b.Reshape("flat", x, {32}))));
    return PassOutcome{.graph = KITE_TRY(std::move(b).Finish()), .changes = 1, .summary = ""};
  }
};

// A broken pass: it rescales a weight into new bytes but keeps the old weight's id, so a
// backend that prepared (packed) the old bytes under that id would run on them.
class ReuseWeightId final : public Pass {
 public:
  std::string_view name() const override { return "reuse_weight_id"; }
  Result<PassOutcome> Run(const Graph& graph) override {
    GraphRewriter rw = KITE_TRY(GraphRewriter::Create(graph));
    const ValueId old_w = graph.nodes()[1].inputs[1];
    TensorView scaled = KITE_TRY(
        ScaleColumns(store_, "w.scaled", graph.value(old_w), std::vector<float>(8, 2.0f), false));
    scaled.id = graph.value(old_w).weight_id;
    KITE_RETURN_IF_ERROR(rw.Remap(old_w, KITE_TRY(rw.builder().Weight(scaled))));
    Graph out = KITE_TRY(
        std::move(rw).Run([](GraphRewriter&, const Node&) -> Result<std::optional<ValueId>> {
          return std::nullopt;
        }));
    return PassOutcome{.graph = std::move(out), .changes = 1, .summary = ""};
  }

 private:
  WeightStore store_;
};

TEST(PassManager, RunsPassesInOrderAndReportsEach) {
  Model model;
  WeightStore store;
  PassManager passes;
  passes.Add(std::make_unique<SiluToGelu>());
  passes.Add(std::make_unique<FoldChannelScale>(
      &store, std::vector<ChannelScale>{{.norm = "norm", .scale = std::vector<float>(8, 2.0f)}}));
  EXPECT_EQ(passes.size(), 2u);
  std::vector<PassReport> report;
  auto out = passes.Run(model.graph.Copy(), &report);
  ASSERT_TRUE(out.has_value()) << out.error().message;
  EXPECT_EQ(out->nodes()[2].op(), OpKind::kGelu);  // the first pass's work survives the second
  EXPECT_EQ(out->value(out->nodes()[1].inputs[1]).name, "proj.weight");
  ASSERT_EQ(report.size(), 2u);
  EXPECT_EQ(ReportString(report),
            "silu_to_gelu: 1 changes, 3 -> 3 nodes\n"
            "fold_channel_scale: 2 changes, 3 -> 3 nodes (norm -> 1 matmuls)\n");
}

TEST(PassManager, AChangedInterfaceIsAnErrorNamingThePass) {
  Model model;
  PassManager passes;
  passes.Add(std::make_unique<SiluToGelu>());
  passes.Add(std::make_unique<FlattenOutput>());
  std::vector<PassReport> report;
  auto out = passes.Run(model.graph.Copy(), &report);
  ASSERT_FALSE(out.has_value());
  EXPECT_TRUE(Contains(out.error().message,
                       "pass flatten_output: output 0 was 'act' [4, 16] f32, now 'flat' [32] f32"));
  EXPECT_EQ(report.size(), 1u);  // the passes before it reported
}

TEST(PassManager, AWeightIdReusedForOtherBytesIsAnError) {
  Model model;
  PassManager passes;
  passes.Add(std::make_unique<ReuseWeightId>());
  auto out = passes.Run(model.graph.Copy());
  ASSERT_FALSE(out.has_value());
  EXPECT_EQ(out.error().code, ErrorCode::kInternal);
  EXPECT_TRUE(Contains(out.error().message,
                       "pass reuse_weight_id: weights 'w' [16, 8] f32 and "
                       "'w.scaled' [16, 8] f32 share id"));
}

}  // namespace
}  // namespace kite
