// Values that carry a quantization encoding, through the builder and the op rules: integer
// activations are accepted with an encoding and refused, by name, without one.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "graph/builder.h"
#include "graph/testing.h"

namespace kite {
namespace {

using testing::Contains;
using testing::FakeWeights;

QuantEncoding PerTensorU8(float scale, int32_t offset) {
  QuantEncoding e;
  e.bits = 8;
  e.is_signed = false;
  e.scales = {scale};
  e.offsets = {offset};
  return e;
}

QuantEncoding PerAxisI8(int32_t axis, int64_t channels) {
  QuantEncoding e;
  e.bits = 8;
  e.is_signed = true;
  e.granularity = EncodingGranularity::kPerAxis;
  e.axis = axis;
  e.scales.assign(channels, 0.01f);
  return e;
}

TEST(EncodedValues, IntegerActivationWithoutEncodingIsRefusedByName) {
  FakeWeights weights;
  GraphBuilder b;
  const ValueId h = *b.Input("h", DType::kU8, {13, 64});
  const ValueId w = *b.Weight(weights.View("blk.0.attn_q.weight", {64, 64}));
  const Result<ValueId> q = b.MatMul("blk.0.attn_q", h, w);
  ASSERT_FALSE(q.has_value());
  EXPECT_EQ(q.error().code, ErrorCode::kInvalidInput);
  EXPECT_TRUE(Contains(q.error().message, "node 'blk.0.attn_q' (matmul)"));
  EXPECT_TRUE(Contains(q.error().message,
                       "x 'h' [13, 64] u8 is an integer activation without a quantization "
                       "encoding"));
  // Every op that reads activations says the same.
  const ValueId g = *b.Input("g", DType::kI16, {13, 64});
  for (const Result<ValueId>& refused :
       {b.Silu("act", g), b.Add("sum", h, h), b.SwiGlu("ffn", g, g), b.Softmax("p", g),
        b.RmsNorm("norm", g, *b.Weight(weights.View("norm.weight", {64})), 1e-5f)}) {
    ASSERT_FALSE(refused.has_value());
    EXPECT_TRUE(Contains(refused.error().message, "is an integer activation without"));
  }
  // A float type other than f32 is no activation either.
  const ValueId half = *b.Input("half", DType::kF16, {13, 64});
  const Result<ValueId> silu = b.Silu("act2", half);
  ASSERT_FALSE(silu.has_value());
  EXPECT_TRUE(Contains(silu.error().message,
                       "x 'half' [13, 64] f16: expected f32, or i8/u8/i16/u16 carrying"));
}

TEST(EncodedValues, EncodedActivationsAreAcceptedAndOutputsMayBeEncoded) {
  FakeWeights weights;
  GraphBuilder b;
  const ValueId h = *b.Input("h", DType::kU8, {13, 64}, PerTensorU8(0.05f, -128));
  const ValueId w = *b.Weight(weights.View("w", {32, 64}, DType::kI8), PerAxisI8(0, 32));
  const Result<ValueId> q = b.MatMul("q", h, w);
  ASSERT_TRUE(q.has_value()) << q.error().message;
  EXPECT_EQ(b.value(*q).dtype, DType::kF32);  // real values unless an output encoding is set
  EXPECT_FALSE(b.value(*q).encoding.has_value());
  EXPECT_EQ(b.value(w).encoding->scales.size(), 32u);

  QuantEncoding s16 = PerTensorU8(0.001f, 0);
  s16.bits = 16;
  s16.is_signed = true;
  const Result<ValueId> act = b.AddNode("act", SiluAttrs{}, {*q}, s16);
  ASSERT_TRUE(act.has_value()) << act.error().message;
  EXPECT_EQ(b.value(*act).dtype, DType::kI16);
  ASSERT_TRUE(b.value(*act).encoding.has_value());
  EXPECT_EQ(b.value(*act).encoding->scales, std::vector<float>{0.001f});
  // ... which the next op reads as an activation, through a view that keeps the encoding.
  const ValueId rows = *b.Reshape("rows", *act, {13, 2, 16});
  EXPECT_EQ(b.value(rows).dtype, DType::kI16);
  ASSERT_TRUE(b.value(rows).encoding.has_value());
  const Result<ValueId> p = b.Softmax("p", rows);
  ASSERT_TRUE(p.has_value()) << p.error().message;
  ASSERT_TRUE(b.MarkOutput(*p));
  const Graph graph = *std::move(b).Finish();
  EXPECT_TRUE(Contains(graph.ToString(), "act [13, 32] i16 (s16 per-tensor [1 scales]) <-"));
  EXPECT_EQ(graph.EncodedOperand(graph.nodes()[0])->name, "h");
  EXPECT_EQ(graph.EncodedOperand(graph.nodes()[1])->name, "act");  // its output
}

TEST(EncodedValues, BadEncodingsAreRefusedNamingTheValue) {
  FakeWeights weights;
  GraphBuilder b;
  const Result<ValueId> input = b.Input("h", DType::kI8, {13, 64}, PerTensorU8(0.05f, 0));
  ASSERT_FALSE(input.has_value());
  EXPECT_TRUE(Contains(input.error().message,
                       "graph input 'h': encoding: an unsigned 8-bit encoding is stored as u8, "
                       "not i8"));
  const Result<ValueId> weight =
      b.Weight(weights.View("blk.0.ffn_up.weight", {32, 64}, DType::kI8), PerAxisI8(0, 31));
  ASSERT_FALSE(weight.has_value());
  EXPECT_TRUE(Contains(weight.error().message,
                       "weight 'blk.0.ffn_up.weight': encoding: 31 scales for per-axis on shape "
                       "[32, 64], expected 32"));
  const ValueId x = *b.Input("x", DType::kF32, {13, 64});
  const Result<ValueId> out = b.AddNode("act", SiluAttrs{}, {x}, PerAxisI8(1, 13));
  ASSERT_FALSE(out.has_value());
  EXPECT_TRUE(Contains(out.error().message,
                       "node 'act' (silu) output: encoding: 13 scales for per-axis on shape [13, "
                       "64], expected 64"));
}

TEST(EncodedValues, ViewsKeepOnlyPerTensorEncodings) {
  FakeWeights weights;
  GraphBuilder b;
  const ValueId x = *b.Input("x", DType::kI8, {4, 64}, PerAxisI8(0, 4));
  const Result<ValueId> slice = b.Slice("rows", x, 0, 0, 2);
  ASSERT_FALSE(slice.has_value());
  EXPECT_TRUE(Contains(slice.error().message, "x 'x' [4, 64] i8 has a s8 per-axis(0)"));
  const ValueId y = *b.Input("y", DType::kU8, {4, 64}, PerTensorU8(0.1f, 0));
  const Result<ValueId> given =
      b.AddNode("view", ReshapeAttrs{.shape = {256}}, {y}, PerTensorU8(0.2f, 0));
  ASSERT_FALSE(given.has_value());
  EXPECT_TRUE(Contains(given.error().message, "a view's output keeps its input's encoding"));
}

}  // namespace
}  // namespace kite
