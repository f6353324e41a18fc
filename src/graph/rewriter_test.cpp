#include "graph/rewriter.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "graph/testing.h"

namespace kite {
namespace {

using testing::Contains;
using testing::FakeWeights;

// x [4, 64] -> rms_norm(norm.weight) -> matmul(w [32, 64]) -> silu -> reshape [128] = output.
struct Fixture {
  FakeWeights weights;
  Graph graph;
  ValueId w;

  Fixture() {
    GraphBuilder b;
    const ValueId x = *b.Input("x", DType::kF32, {4, 64});
    const ValueId positions = *b.Input("positions", DType::kI32, {4});  // read by nothing
    (void)positions;
    const ValueId h =
        *b.RmsNorm("norm", x, *b.Weight(weights.View("norm.weight", {64}, DType::kF32, 7)), 1e-5f);
    w = *b.Weight(weights.View("w", {32, 64}, DType::kF32, 8));
    const ValueId y = *b.MatMul("proj", h, w);
    const ValueId act = *b.Silu("act", y);
    EXPECT_TRUE(b.MarkOutput(*b.Reshape("flat", act, {128})));
    graph = *std::move(b).Finish();
  }
};

GraphRewriter::Replace CopyAll() {
  return [](GraphRewriter&, const Node&) -> Result<std::optional<ValueId>> { return std::nullopt; };
}

TEST(GraphRewriter, CopyKeepsNodesInputsWeightsAndOutputs) {
  Fixture f;
  auto rw = GraphRewriter::Create(f.graph);
  ASSERT_TRUE(rw.has_value()) << rw.error().message;
  auto copy = std::move(*rw).Run(CopyAll());
  ASSERT_TRUE(copy.has_value()) << copy.error().message;
  EXPECT_EQ(copy->ToString(), f.graph.ToString());
  ASSERT_EQ(copy->inputs().size(), 2u);  // unread inputs stay: callers bind them by name
  EXPECT_TRUE(copy->FindInput("positions").has_value());
  const Node& proj = copy->nodes()[1];
  EXPECT_EQ(copy->value(proj.inputs[1]).weight_id, 8u);  // the same bytes keep their id
  EXPECT_EQ(copy->value(proj.inputs[1]).data, f.weights.bytes.data());
  ASSERT_EQ(copy->outputs().size(), 1u);
  EXPECT_EQ(copy->value(copy->outputs()[0]).name, "flat");
  EXPECT_TRUE(copy->value(copy->outputs()[0]).is_view());
}

TEST(GraphRewriter, ReplacesANodeAndRemapsAWeight) {
  Fixture f;
  GraphRewriter rw = *GraphRewriter::Create(f.graph);
  TensorView scaled = f.weights.View("w.scaled", {32, 64}, DType::kF32, 9);
  scaled.data = f.weights.other.data();
  const ValueId new_w = *rw.builder().Weight(scaled);
  ASSERT_TRUE(rw.Remap(f.w, new_w));
  auto out =
      std::move(rw).Run([](GraphRewriter& rw, const Node& node) -> Result<std::optional<ValueId>> {
        if (node.op() != OpKind::kSilu) return std::nullopt;
        return rw.builder().Gelu(node.name + ".gelu", KITE_TRY(rw.Map(node.inputs[0])),
                                 GeluApprox::kErf);
      });
  ASSERT_TRUE(out.has_value()) << out.error().message;
  ASSERT_EQ(out->nodes().size(), 4u);
  EXPECT_EQ(out->nodes()[2].op(), OpKind::kGelu);
  EXPECT_EQ(out->nodes()[2].name, "act.gelu");
  // The reshape now reads the gelu, and the matmul the new weight; the old one is gone.
  EXPECT_EQ(out->nodes()[3].inputs[0], out->nodes()[2].output);
  const Value& w = out->value(out->nodes()[1].inputs[1]);
  EXPECT_EQ(w.name, "w.scaled");
  EXPECT_EQ(w.weight_id, 9u);
  EXPECT_EQ(w.data, f.weights.other.data());
  EXPECT_FALSE(Contains(out->ToString(), "w [32, 64]"));
}

TEST(GraphRewriter, AReplacementMustKeepShapeAndDtype) {
  Fixture f;
  GraphRewriter rw = *GraphRewriter::Create(f.graph);
  const ValueId narrow = *rw.builder().Weight(f.weights.View("narrow", {16, 64}));
  const Status remap = rw.Remap(f.w, narrow);
  ASSERT_FALSE(remap.has_value());
  EXPECT_TRUE(
      Contains(remap.error().message, "'w' [32, 64] f32 cannot stand for 'narrow' [16, 64] f32"));

  TensorView half_view = f.weights.View("half", {32, 64});
  half_view.dtype = DType::kF16;
  const Status half = rw.Remap(f.w, *rw.builder().Weight(half_view));
  ASSERT_FALSE(half.has_value());
  EXPECT_TRUE(
      Contains(half.error().message, "'w' [32, 64] f32 cannot stand for 'half' [32, 64] f16"));

  auto out =
      std::move(rw).Run([&](GraphRewriter& rw, const Node& node) -> Result<std::optional<ValueId>> {
        if (node.op() != OpKind::kMatMul) return std::nullopt;
        return rw.builder().MatMul("proj.narrow", KITE_TRY(rw.Map(node.inputs[0])), narrow);
      });
  ASSERT_FALSE(out.has_value());
  EXPECT_TRUE(Contains(out.error().message, "rewriting node 'proj' (matmul)"));
  EXPECT_TRUE(Contains(out.error().message, "'proj' [4, 32] f32 cannot stand for"));
}

TEST(GraphRewriter, ErrorsOfTheCallbackNameTheNode) {
  Fixture f;
  auto out = std::move(*GraphRewriter::Create(f.graph))
                 .Run([](GraphRewriter& rw, const Node& node) -> Result<std::optional<ValueId>> {
                   if (node.op() != OpKind::kRmsNorm) return std::nullopt;
                   // Reads the matmul's output, which comes later: not yet in the new graph.
                   return rw.Map(rw.source().nodes()[1].output);
                 });
  ASSERT_FALSE(out.has_value());
  EXPECT_EQ(out.error().code, ErrorCode::kInternal);
  EXPECT_TRUE(Contains(out.error().message,
                       "rewriting node 'norm' (rms_norm): value 'proj' is read before its node "
                       "was rewritten"));
}

TEST(GraphRewriter, AQuantizedValueMayStandForAFloatOne) {
  Fixture f;
  QuantEncoding s8;
  s8.is_signed = true;
  s8.scales = {0.02f};
  auto out = std::move(*GraphRewriter::Create(f.graph))
                 .Run([&](GraphRewriter& rw, const Node& node) -> Result<std::optional<ValueId>> {
                   if (node.op() != OpKind::kMatMul) return std::nullopt;
                   std::vector<ValueId> inputs;
                   for (ValueId input : node.inputs) inputs.push_back(KITE_TRY(rw.Map(input)));
                   return rw.builder().AddNode(node.name, node.attrs, std::move(inputs), s8);
                 });
  ASSERT_TRUE(out.has_value()) << out.error().message;
  // The silu after it reads the i8 activation (its rule accepts it: it carries an encoding).
  EXPECT_EQ(out->value(out->nodes()[1].output).dtype, DType::kI8);
  EXPECT_EQ(out->value(out->nodes()[2].inputs[0]).dtype, DType::kI8);
  EXPECT_EQ(out->value(out->outputs()[0]).dtype, DType::kF32);
}

TEST(GraphRewriter, EncodingsAreCopied) {
  FakeWeights weights;
  QuantEncoding u8;
  u8.scales = {0.1f};
  GraphBuilder b;
  const ValueId x = *b.Input("x", DType::kU8, {4, 64}, u8);
  const ValueId y = *b.AddNode("act", SiluAttrs{}, {x}, u8);
  ASSERT_TRUE(b.MarkOutput(*b.Reshape("flat", y, {256})));
  const Graph graph = *std::move(b).Finish();
  auto copy = std::move(*GraphRewriter::Create(graph)).Run(CopyAll());
  ASSERT_TRUE(copy.has_value()) << copy.error().message;
  EXPECT_EQ(copy->ToString(), graph.ToString());
  ASSERT_TRUE(copy->value(copy->inputs()[0]).encoding.has_value());
  ASSERT_TRUE(copy->value(copy->nodes()[0].output).encoding.has_value());
  EXPECT_EQ(copy->value(copy->outputs()[0]).dtype, DType::kU8);
}

}  // namespace
}  // namespace kite
