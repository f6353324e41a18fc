#include "graph/builder.h"

#include <gtest/gtest.h>

#include <vector>

#include "graph/testing.h"

namespace kite {
namespace {

using testing::Contains;
using testing::FakeWeights;

TEST(GraphBuilder, MatMulErrorNamesNodeAndBothShapes) {
  FakeWeights weights;
  GraphBuilder b;
  const ValueId x = *b.Input("x", DType::kF32, {13, 64});
  const ValueId w = *b.Weight(weights.View("blk.0.ffn_up.weight", {128, 65}));
  const Result<ValueId> out = b.MatMul("blk.0.ffn_up", x, w);
  ASSERT_FALSE(out.has_value());
  EXPECT_EQ(out.error().code, ErrorCode::kInvalidInput);
  EXPECT_TRUE(Contains(out.error().message, "node 'blk.0.ffn_up' (matmul)"));
  EXPECT_TRUE(Contains(out.error().message, "x [13, 64] f32"));
  EXPECT_TRUE(Contains(out.error().message, "w [128, 65] f32"));
}

TEST(GraphBuilder, MatMulShapesAndBias) {
  FakeWeights weights;
  GraphBuilder b;
  const ValueId x = *b.Input("x", DType::kF32, {2, 3, 64});
  const ValueId w = *b.Weight(weights.View("w", {10, 64}, DType::kQ8_0));
  const ValueId bias = *b.Weight(weights.View("bias", {10}, DType::kF16));
  const ValueId out = *b.MatMul("proj", x, w, bias);
  EXPECT_EQ(b.value(out).shape, (std::vector<int64_t>{2, 3, 10}));
  EXPECT_EQ(b.value(out).dtype, DType::kF32);

  const ValueId short_bias = *b.Weight(weights.View("short_bias", {9}));
  const Result<ValueId> bad = b.MatMul("proj2", x, w, short_bias);
  ASSERT_FALSE(bad.has_value());
  EXPECT_TRUE(Contains(bad.error().message, "bias [9] f32"));
}

TEST(GraphBuilder, QuantizedRowsMustBeWholeBlocks) {
  FakeWeights weights;
  GraphBuilder b;
  // 4 rows of 48: 192 elements is a whole number of q8_0 blocks, but a row is not.
  const Result<ValueId> w = b.Weight(weights.View("w", {4, 48}, DType::kQ8_0));
  ASSERT_TRUE(w.has_value());
  const ValueId x = *b.Input("x", DType::kF32, {1, 48});
  const Result<ValueId> out = b.MatMul("proj", x, *w);
  ASSERT_FALSE(out.has_value());
  EXPECT_TRUE(Contains(out.error().message, "not a whole number of q8_0 blocks of 32"));
  // A weight whose total is not whole blocks fails already when bound.
  const Result<ValueId> odd = b.Weight(weights.View("odd", {3, 33}, DType::kQ4_0));
  ASSERT_FALSE(odd.has_value());
  EXPECT_TRUE(Contains(odd.error().message, "weight 'odd'"));
}

TEST(GraphBuilder, WeightNeedsEnoughBytes) {
  std::vector<float> data(10);
  GraphBuilder b;
  const Result<ValueId> w = b.Weight(TensorView{.name = "w",
                                                .dtype = DType::kF32,
                                                .shape = {3, 4},
                                                .data = data.data(),
                                                .bytes = data.size() * sizeof(float)});
  ASSERT_FALSE(w.has_value());
  EXPECT_TRUE(Contains(w.error().message, "needs 48 bytes, the view holds 40"));
}

TEST(GraphBuilder, EmbeddingNeedsI32Ids) {
  FakeWeights weights;
  GraphBuilder b;
  const ValueId table = *b.Weight(weights.View("token_embd", {100, 16}, DType::kF16));
  const ValueId ids = *b.Input("tokens", DType::kF32, {4});
  const Result<ValueId> out = b.Embedding("embed", table, ids);
  ASSERT_FALSE(out.has_value());
  EXPECT_TRUE(Contains(out.error().message, "ids [4] f32: expected dtype i32"));
  const ValueId good_ids = *b.Input("tokens_i32", DType::kI32, {4});
  EXPECT_EQ(b.value(*b.Embedding("embed", table, good_ids)).shape, (std::vector<int64_t>{4, 16}));
}

TEST(GraphBuilder, BroadcastRules) {
  GraphBuilder b;
  const ValueId a = *b.Input("a", DType::kF32, {13, 7});
  const ValueId row = *b.Input("row", DType::kF32, {7});
  const ValueId col = *b.Input("col", DType::kF32, {2, 1, 1});
  EXPECT_EQ(b.value(*b.Add("a+row", a, row)).shape, (std::vector<int64_t>{13, 7}));
  EXPECT_EQ(b.value(*b.Mul("a*col", a, col)).shape, (std::vector<int64_t>{2, 13, 7}));
  const ValueId wrong = *b.Input("wrong", DType::kF32, {6});
  const Result<ValueId> bad = b.Add("a+wrong", a, wrong);
  ASSERT_FALSE(bad.has_value());
  EXPECT_TRUE(Contains(bad.error().message, "a [13, 7] f32 and b [6] f32 do not broadcast"));
}

TEST(GraphBuilder, RopeAndAttentionChecks) {
  GraphBuilder b;
  const ValueId q = *b.Input("q", DType::kF32, {5, 6, 8});
  const ValueId k = *b.Input("k", DType::kF32, {5, 4, 8});
  const ValueId positions = *b.Input("positions", DType::kI32, {5});
  const ValueId short_positions = *b.Input("short_positions", DType::kI32, {4});

  RopeAttrs rope{.rotary_dim = 7};
  Result<ValueId> bad = b.Rope("rope_q", q, positions, rope);
  ASSERT_FALSE(bad.has_value());
  EXPECT_TRUE(Contains(bad.error().message, "rotary_dim 7 must be even"));
  rope.rotary_dim = 8;
  bad = b.Rope("rope_q", q, short_positions, rope);
  ASSERT_FALSE(bad.has_value());
  EXPECT_TRUE(Contains(bad.error().message, "expected positions [5]"));
  EXPECT_TRUE(b.Rope("rope_q", q, positions, rope).has_value());

  bad = b.Attention("attn", q, k, k, positions, {});
  ASSERT_FALSE(bad.has_value());  // 6 query heads over 4 kv heads
  EXPECT_TRUE(Contains(bad.error().message, "q [5, 6, 8] f32 and k [5, 4, 8] f32"));
  const ValueId k3 = *b.Input("k3", DType::kF32, {5, 3, 8});
  const Result<ValueId> good = b.Attention("attn", q, k3, k3, positions, {});
  ASSERT_TRUE(good.has_value());
  EXPECT_EQ(b.value(*good).shape, (std::vector<int64_t>{5, 6, 8}));
}

TEST(GraphBuilder, ViewsAliasTheirSourceWithStrides) {
  GraphBuilder b;
  const ValueId x = *b.Input("x", DType::kF32, {4, 6});  // strides [6, 1]
  const ValueId xt = *b.Permute("xt", x, {1, 0});
  EXPECT_EQ(b.value(xt).shape, (std::vector<int64_t>{6, 4}));
  EXPECT_EQ(b.value(xt).strides, (std::vector<int64_t>{1, 6}));
  EXPECT_EQ(b.value(xt).alias_of, x);
  EXPECT_FALSE(b.value(xt).contiguous());

  // Rows 2..4 of the transpose start at column 2 of x: offset 2; a view of a view aliases the
  // original buffer.
  const ValueId rows = *b.Slice("rows", xt, 0, 2, 5);
  EXPECT_EQ(b.value(rows).shape, (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(b.value(rows).alias_of, x);
  EXPECT_EQ(b.value(rows).alias_offset, 2);
  const ValueId cols = *b.Slice("cols", rows, -1, 1, 3);
  EXPECT_EQ(b.value(cols).alias_offset, 2 + 6);

  const Result<ValueId> reshaped = b.Reshape("flat", xt, {24});
  ASSERT_FALSE(reshaped.has_value());  // a transpose is not contiguous
  EXPECT_TRUE(Contains(reshaped.error().message, "strided view"));
  const ValueId heads = *b.Reshape("heads", x, {4, -1, 3});
  EXPECT_EQ(b.value(heads).shape, (std::vector<int64_t>{4, 2, 3}));
  EXPECT_EQ(b.value(heads).alias_of, x);
  EXPECT_FALSE(b.Reshape("bad", x, {5, -1}).has_value());
  EXPECT_FALSE(b.Permute("bad", x, {0, 0}).has_value());
  EXPECT_FALSE(b.Slice("bad", x, 1, 3, 7).has_value());
}

TEST(GraphBuilder, QuantizedWeightSlicesOnlyWholeRows) {
  FakeWeights weights;
  GraphBuilder b;
  const ValueId qkv = *b.Weight(weights.View("qkv", {96, 64}, DType::kQ4_0));
  const ValueId k_rows = *b.Slice("k_rows", qkv, 0, 32, 64);
  EXPECT_EQ(b.value(k_rows).alias_offset, 32 * 64);
  EXPECT_FALSE(b.Slice("half_rows", qkv, 1, 0, 32).has_value());
}

TEST(GraphBuilder, BadIdsNamesAndOutputs) {
  GraphBuilder b;
  const ValueId x = *b.Input("x", DType::kF32, {2});
  EXPECT_FALSE(b.Input("x", DType::kF32, {3}).has_value());  // name taken
  EXPECT_FALSE(b.Input("q", DType::kQ8_0, {32}).has_value());
  EXPECT_FALSE(b.Input("empty", DType::kF32, {0}).has_value());
  const Result<ValueId> bad = b.Silu("act", ValueId{7});
  ASSERT_FALSE(bad.has_value());
  EXPECT_TRUE(Contains(bad.error().message, "value id 7 is not in this graph"));
  const Result<ValueId> arity = b.AddNode("add1", AddAttrs{}, {x});
  ASSERT_FALSE(arity.has_value());
  EXPECT_TRUE(Contains(arity.error().message, "takes 2 inputs"));

  GraphBuilder no_outputs;
  ASSERT_TRUE(no_outputs.Input("x", DType::kF32, {2}).has_value());
  EXPECT_FALSE(std::move(no_outputs).Finish().has_value());

  const ValueId y = *b.Silu("act", x);
  ASSERT_TRUE(b.MarkOutput(y));
  const Result<Graph> graph = std::move(b).Finish();
  ASSERT_TRUE(graph.has_value());
  EXPECT_EQ(graph->nodes().size(), 1u);
  EXPECT_EQ(graph->nodes()[0].op(), OpKind::kSilu);
  EXPECT_EQ(graph->nodes()[0].op_name(), "silu");
  EXPECT_EQ(graph->outputs().size(), 1u);
  EXPECT_EQ(graph->FindInput("x"), x);
}

}  // namespace
}  // namespace kite
