// The passes that make a graph fit a chip keep what it computes, checked on the ref backend:
// decompose_rope and decompose_softcap against the fused ops they replace (random inputs,
// awkward shapes, every RoPE mode and scaling), explicit_fallback against the plain arithmetic
// of its converts, and PrepareForNpu's choice of passes per chip.
#include "backends/npusim/support/prepare_for_npu.h"

#include <gtest/gtest.h>

#include <cmath>

#include "backends/ref/ref_backend.h"
#include "backends/testing.h"
#include "graph/builder.h"
#include "graph/passes/decompose_rope.h"
#include "graph/passes/decompose_softcap.h"
#include "graph/passes/explicit_fallback.h"
#include "runtime/testing.h"

namespace kite {
namespace {

struct Inputs {
  std::vector<float> x;
  std::vector<int32_t> positions = {};
};

std::vector<float> RunOnRef(Graph graph, const Inputs& in) {
  RefBackend ref;
  Backend* backends[] = {&ref};
  auto runner = testing::GraphRunner::Compile(std::move(graph), backends);
  EXPECT_TRUE(runner.has_value()) << runner.error().message;
  if (!runner) return {};
  EXPECT_TRUE(runner->SetInput("x", in.x).has_value());
  if (!in.positions.empty()) {
    EXPECT_TRUE(runner->SetInput("positions", in.positions).has_value());
  }
  const Status ran = runner->Run();
  EXPECT_TRUE(ran.has_value()) << ran.error().message;
  auto out = runner->OutputF32(0);
  return out ? std::vector<float>(out->begin(), out->end()) : std::vector<float>{};
}

int64_t CountOps(const Graph& graph, OpKind op) {
  int64_t n = 0;
  for (const Node& node : graph.nodes()) n += node.op() == op;
  return n;
}

Graph RopeGraph(int64_t T, int64_t H, int64_t D, const RopeAttrs& attrs) {
  GraphBuilder b;
  const ValueId x = *b.Input("x", DType::kF32, {T, H, D});
  const ValueId positions = *b.Input("positions", DType::kI32, {T});
  auto rope = b.Rope("rope", x, positions, attrs);
  EXPECT_TRUE(rope.has_value()) << rope.error().message;
  EXPECT_TRUE(b.MarkOutput(*rope).has_value());
  return *std::move(b).Finish();
}

TEST(DecomposeRopeTest, KeepsTheRefOutputInEveryMode) {
  struct Case {
    const char* what;
    int64_t T, H, D;
    RopeAttrs attrs;
  };
  RopeAttrs neox{.rotary_dim = 64};
  RopeAttrs interleaved{.mode = RopeMode::kInterleaved, .theta = 500000.0f, .rotary_dim = 6};
  RopeAttrs partial{.rotary_dim = 4, .attention_factor = 1.19f};  // D = 10: 6 dims pass
  RopeAttrs llama3{.theta = 500000.0f,
                   .rotary_dim = 32,
                   .scaling = RopeScaling::kLlama3,
                   .factor = 8.0f,
                   .original_max_position = 256};
  RopeAttrs linear{.rotary_dim = 8, .scaling = RopeScaling::kLinear, .factor = 4.0f};
  const std::vector<Case> cases = {{"neox", 5, 3, 64, neox},
                                   {"interleaved", 3, 2, 6, interleaved},
                                   {"partial rotary", 7, 1, 10, partial},
                                   {"llama3 scaling", 4, 5, 32, llama3},
                                   {"linear scaling", 2, 3, 8, linear}};
  const int64_t positions = 5000;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    const Graph graph = RopeGraph(c.T, c.H, c.D, c.attrs);
    WeightStore store;
    DecomposeRope pass(&store, {"rope"}, positions);
    auto decomposed = pass.Run(graph);
    ASSERT_TRUE(decomposed.has_value()) << decomposed.error().message;
    EXPECT_EQ(decomposed->changes, 1);
    EXPECT_EQ(CountOps(decomposed->graph, OpKind::kRope), 0);
    EXPECT_EQ(CountOps(decomposed->graph, OpKind::kEmbedding), 2);  // cos and sin rows
    Inputs in{.x = testing::Random(c.T * c.H * c.D, 7, -2.0f, 2.0f)};
    for (int64_t t = 0; t < c.T; ++t) {  // small, large and the last position the tables hold
      in.positions.push_back(static_cast<int32_t>(t == 0 ? 0 : (t * 1237) % positions));
    }
    in.positions.back() = static_cast<int32_t>(positions - 1);
    const std::vector<float> want = RunOnRef(graph.Copy(), in);
    const std::vector<float> got = RunOnRef(std::move(decomposed->graph), in);
    // The tables round cos and sin to f32 once; ref rounds its double result once.
    testing::ExpectClose(got, want, 1e-5, 1e-5, c.what);
  }
}

TEST(DecomposeRopeTest, RopesWithTheSameRotationShareTables) {
  GraphBuilder b;
  const ValueId x = *b.Input("x", DType::kF32, {2, 2, 8});
  const ValueId positions = *b.Input("positions", DType::kI32, {2});
  const RopeAttrs attrs{.rotary_dim = 8};
  ASSERT_TRUE(b.MarkOutput(*b.Rope("rope_q", x, positions, attrs)).has_value());
  ASSERT_TRUE(b.MarkOutput(*b.Rope("rope_k", x, positions, attrs)).has_value());
  const Graph graph = *std::move(b).Finish();
  WeightStore store;
  DecomposeRope pass(&store, {"rope_q", "rope_k"}, 64);
  auto out = pass.Run(graph);
  ASSERT_TRUE(out.has_value()) << out.error().message;
  EXPECT_EQ(out->summary, "2 rope nodes decomposed into 1 sin/cos table set(s)");
  EXPECT_EQ(store.weights().size(), 3u);  // cos, sin, rotate
  DecomposeRope wrong(&store, {"rope_v"}, 64);
  auto refused = wrong.Run(graph);
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().message, "decompose_rope: 'rope_v' is no rope node of the graph");
}

TEST(DecomposeSoftcapTest, KeepsTheRefOutput) {
  for (const float cap : {30.0f, 1.5f}) {
    SCOPED_TRACE(cap);
    GraphBuilder b;
    const ValueId x = *b.Input("x", DType::kF32, {3, 37});
    ASSERT_TRUE(b.MarkOutput(*b.Softcap("final_softcap", x, cap)).has_value());
    const Graph graph = *std::move(b).Finish();
    WeightStore store;
    DecomposeSoftcap pass(&store, {"final_softcap"});
    auto decomposed = pass.Run(graph);
    ASSERT_TRUE(decomposed.has_value()) << decomposed.error().message;
    EXPECT_EQ(CountOps(decomposed->graph, OpKind::kSoftcap), 0);
    EXPECT_EQ(CountOps(decomposed->graph, OpKind::kSoftmax), 1);
    // Far beyond the cap too, where tanh saturates.
    Inputs in{.x = testing::Random(3 * 37, 11, -4 * cap, 4 * cap)};
    in.x[0] = 0.0f;
    in.x[1] = 1000.0f;
    in.x[2] = -1000.0f;
    const std::vector<float> want = RunOnRef(graph.Copy(), in);
    const std::vector<float> got = RunOnRef(std::move(decomposed->graph), in);
    testing::ExpectClose(got, want, 1e-5, 1e-6 * cap, "softcap");
  }
}

// x -> quantize (u8) -> silu "act" (u8 in, u16 out: refused by the NPU) -> dequantize.
TEST(ExplicitFallbackTest, ConvertsAtEachBoundaryComputeThePlainArithmetic) {
  QuantEncoding u8;
  u8.bits = 8;
  u8.scales = {0.04f};
  u8.offsets = {-128};
  QuantEncoding u16;
  u16.bits = 16;
  u16.scales = {0.0001f};
  u16.offsets = {-20000};
  GraphBuilder b;
  const ValueId x = *b.Input("x", DType::kF32, {4, 33});
  const ValueId q = *b.Quantize("x.quantize", x, u8);
  auto act = b.AddNode("act", SiluAttrs{}, {q}, u16);
  ASSERT_TRUE(act.has_value()) << act.error().message;
  ASSERT_TRUE(b.MarkOutput(*b.Dequantize("act.dequantize", *act)).has_value());
  const Graph graph = *std::move(b).Finish();

  ExplicitFallback pass({"act"});
  auto out = pass.Run(graph);
  ASSERT_TRUE(out.has_value()) << out.error().message;
  EXPECT_EQ(out->changes, 2);
  const std::string text = out->graph.ToString();
  // The NPU's u8 is dequantized for the CPU; the CPU's f32 is quantized back to act's u16.
  EXPECT_NE(text.find("dequantize act.to_cpu.0 [4, 33] f32 <- x.quantize"), std::string::npos)
      << text;
  EXPECT_NE(text.find("silu act [4, 33] f32 <- act.to_cpu.0"), std::string::npos) << text;
  EXPECT_NE(text.find("quantize act.to_npu [4, 33] u16"), std::string::npos) << text;
  EXPECT_NE(text.find("<- act.to_npu"), std::string::npos) << text;  // the old reader reads it

  Inputs in{.x = testing::Random(4 * 33, 3, -6.0f, 6.0f)};
  const std::vector<float> got = RunOnRef(std::move(out->graph), in);
  std::vector<double> want;
  for (float v : in.x) {
    const float h = DequantizeValue(QuantizeValue(v, 0.04f, -128, 0, 255), 0.04f, -128);
    const double silu = h / (1.0 + std::exp(-static_cast<double>(h)));
    want.push_back(DequantizeValue(
        QuantizeValue(static_cast<float>(silu), 0.0001f, -20000, 0, 65535), 0.0001f, -20000));
  }
  // One step of u16 where the float silu lands within rounding of a tie.
  testing::ExpectClose(got, want, 0, 1.0001e-4, "fallback");
}

TEST(ExplicitFallbackTest, AFloatGraphNeedsNoConvert) {
  GraphBuilder b;
  const ValueId x = *b.Input("x", DType::kF32, {2, 4});
  ASSERT_TRUE(b.MarkOutput(*b.Silu("act", x)).has_value());
  const Graph graph = *std::move(b).Finish();
  ExplicitFallback pass({"act"});
  auto out = pass.Run(graph);
  ASSERT_TRUE(out.has_value());
  EXPECT_EQ(out->changes, 0);
  EXPECT_EQ(out->graph.ToString(), graph.ToString());
  ExplicitFallback wrong({"nothing"});
  ASSERT_FALSE(wrong.Run(graph).has_value());
}

// With fp16 activations the ropes are decomposed; with 16-bit integers the graph is unchanged.
TEST(PrepareForNpuTest, DecomposesWhatTheRulesSay) {
  const Graph graph = RopeGraph(3, 2, 8, RopeAttrs{.rotary_dim = 8});
  auto chip = [](const std::string& name) {
    return ReadChipFile(DefaultChipsDir(), name)->features;
  };
  WeightStore store;
  const NpuTarget fp16{.chip = chip("8gen3"), .activations = ActivationKind::kFp16, .context = 128};
  auto prepared = PrepareForNpu(graph, fp16, &store);
  ASSERT_TRUE(prepared.has_value()) << prepared.error().message;
  EXPECT_EQ(CountOps(prepared->graph, OpKind::kRope), 0);
  ASSERT_EQ(prepared->passes.size(), 1u);
  EXPECT_NE(prepared->passes[0].find("decompose_rope"), std::string::npos);
  for (const Node& node : prepared->graph.nodes()) {
    if (!node.is_view()) {
      EXPECT_TRUE(NpuSupports(prepared->graph, node, fp16).ok) << node.name;
    }
  }
  auto int16 = PrepareForNpu(graph, NpuTarget{.chip = chip("888"), .context = 128}, &store);
  ASSERT_TRUE(int16.has_value());
  EXPECT_TRUE(int16->passes.empty());
  EXPECT_EQ(int16->graph.ToString(), graph.ToString());
}

}  // namespace
}  // namespace kite
