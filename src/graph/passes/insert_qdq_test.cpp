#include "graph/passes/insert_qdq.h"

#include <gtest/gtest.h>

#include "graph/builder.h"
#include "graph/testing.h"

namespace kite {
namespace {

using testing::Contains;

QuantEncoding U(int32_t bits, float scale, int32_t offset) {
  QuantEncoding e;
  e.bits = bits;
  e.scales = {scale};
  e.offsets = {offset};
  return e;
}

// x -> rms_norm "n" -> reshape "r" -> matmul "mm" (the output).
Graph SmallGraph(testing::FakeWeights& weights) {
  GraphBuilder b;
  const ValueId x = *b.Input("x", DType::kF32, {3, 8});
  const ValueId n = *b.RmsNorm("n", x, *b.Weight(weights.View("n.weight", {8})), 1e-5f);
  const ValueId r = *b.Reshape("r", n, {3, 8});
  const ValueId mm = *b.MatMul("mm", r, *b.Weight(weights.View("w", {4, 8})));
  EXPECT_TRUE(b.MarkOutput(mm).has_value());
  return *std::move(b).Finish();
}

TEST(InsertQdq, PutsAQuantizeDequantizePairAfterEachNamedNode) {
  testing::FakeWeights weights;
  const Graph graph = SmallGraph(weights);
  InsertQdq pass({{"n", U(16, 0.001f, -30000)}, {"mm", U(8, 0.1f, -128)}});
  auto outcome = pass.Run(graph);
  ASSERT_TRUE(outcome.has_value()) << outcome.error().message;
  EXPECT_EQ(outcome->changes, 2);
  const Graph& out = outcome->graph;
  std::vector<std::string> names;
  for (const Node& node : out.nodes()) names.push_back(node.name);
  EXPECT_EQ(names, (std::vector<std::string>{"n", "n.quantize", "n.dequantize", "r", "mm",
                                             "mm.quantize", "mm.dequantize"}));
  const Value& q = out.value(out.nodes()[1].output);
  EXPECT_EQ(q.dtype, DType::kU16);
  ASSERT_TRUE(q.encoding.has_value());
  EXPECT_EQ(*q.encoding, U(16, 0.001f, -30000));
  EXPECT_EQ(out.value(out.nodes()[2].output).dtype, DType::kF32);
  // The view reads the dequantized value; the graph's output is the last dequantize.
  EXPECT_EQ(out.nodes()[3].inputs[0], out.nodes()[2].output);
  EXPECT_EQ(out.value(out.nodes()[5].output).dtype, DType::kU8);
  ASSERT_EQ(out.outputs().size(), 1u);
  EXPECT_EQ(out.outputs()[0], out.nodes()[6].output);
}

TEST(InsertQdq, RefusesATableThatDoesNotFitTheGraph) {
  testing::FakeWeights weights;
  const Graph graph = SmallGraph(weights);
  auto missing = InsertQdq({{"blk.9.attn_norm", U(8, 0.1f, 0)}}).Run(graph);
  ASSERT_FALSE(missing.has_value());
  EXPECT_TRUE(Contains(missing.error().message,
                       "the activation encoding for 'blk.9.attn_norm' names no node"));
  auto view = InsertQdq({{"r", U(8, 0.1f, 0)}}).Run(graph);
  ASSERT_FALSE(view.has_value());
  EXPECT_TRUE(Contains(view.error().message, "node 'r' (reshape) is a view"));
}

TEST(InsertQdq, TheOpsCheckTheirEncodings) {
  GraphBuilder b;
  const ValueId x = *b.Input("x", DType::kF32, {2, 4});
  auto four_bits = b.Quantize("q4", x, U(4, 0.1f, 0));
  ASSERT_FALSE(four_bits.has_value());
  EXPECT_TRUE(Contains(four_bits.error().message, "4-bit encoding, expected 8 or 16"));
  auto not_encoded = b.Dequantize("dq", x);
  ASSERT_FALSE(not_encoded.has_value());
  EXPECT_TRUE(Contains(not_encoded.error().message, "input 'x' carries no encoding"));
  const ValueId q = *b.Quantize("q", x, U(8, 0.1f, -3));
  auto other = b.AddNode("dq2", DequantizeAttrs{.encoding = U(8, 0.2f, -3)}, {q});
  ASSERT_FALSE(other.has_value());
  EXPECT_TRUE(Contains(other.error().message, "the op dequantizes u8"));
  auto mismatch = b.AddNode("q2", QuantizeAttrs{.encoding = U(8, 0.1f, 0)}, {x}, U(8, 0.5f, 0));
  ASSERT_FALSE(mismatch.has_value());
  EXPECT_TRUE(Contains(mismatch.error().message, "differs from the op's"));
}

}  // namespace
}  // namespace kite
