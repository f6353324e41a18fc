#include "profile/cost_model.h"

#include <gtest/gtest.h>

#include "models/model_config.h"
#include "profile/shape_only_model.h"

namespace kite {
namespace {

// A chip with round numbers, so that every expected time below is arithmetic on the formulas of
// docs/cost_model.md §2, done by hand.
Chip RoundChip() {
  Chip chip;
  chip.name = "round";
  chip.hexagon = "v00";
  chip.hvx_contexts = 1;
  chip.dram_peak_gbs = 2;  // 2e9 B/s
  chip.vtcm_mb = 1;        // no activation of the tiny model comes near it
  chip.act16 = true;
  chip.fp16 = true;
  chip.vtcm_mb = 8;
  ChipCost& c = chip.cost;
  c.hmx_macs_per_s = 1e9;
  c.dram_efficiency = 0.5;  // 1e9 B/s reached
  c.op_overhead_us = 1;
  c.graph_overhead_us = 10;
  c.fp16_cost = 3;
  c.a8_cost = 0.5;
  c.dequant_weights_per_s = 1e9;
  c.vtcm_spill_cost = 2;
  c.vec_elems_per_s_per_context = 1e6;
  c.tile = 32;
  c.cpu_bw_fraction = 0.5;  // 1e9 B/s
  c.cpu_op_overhead_us = 5;
  c.cpu_macs_per_s = 1e6;
  return chip;
}

// One block: hidden 64, 2 query heads and 1 kv head of 32, ffn 96, vocab 100, tied.
ModelConfig TinyConfig() {
  ModelConfig c;
  c.source = "tiny";
  c.n_layers = 1;
  c.hidden = 64;
  c.n_heads = 2;
  c.n_kv_heads = 1;
  c.head_dim = 32;
  c.ffn = 96;
  c.vocab = 100;
  c.context_length = 1024;
  c.rope.rotary_dim = 32;
  c.tied_embeddings = true;
  return c;
}

const OpCost& Op(const GraphCost& g, const std::string& node) {
  for (const OpCost& op : g.ops) {
    if (op.node == node) return op;
  }
  ADD_FAILURE() << "no op " << node;
  static const OpCost none;
  return none;
}

GraphCost Phase(const Chip& chip, const std::string& recipe, int32_t tokens, int32_t ctx) {
  auto model = ShapeOnlyModel(TinyConfig());
  EXPECT_TRUE(model.has_value()) << model.error().message;
  auto graph = (*model)->BuildGraph({.tokens = tokens});
  EXPECT_TRUE(graph.has_value()) << graph.error().message;
  auto cost = CostGraph(*graph, chip, *FindRecipe(recipe), ctx);
  EXPECT_TRUE(cost.has_value()) << cost.error().message;
  return std::move(*cost);
}

GraphCost Decode(const Chip& chip, const std::string& recipe, int32_t ctx) {
  return Phase(chip, recipe, 1, ctx);
}

TEST(CostModelTest, TinyDecodeStepMatchesHandComputedTimes) {
  const GraphCost g = Decode(RoundChip(), "w8a8", 64);
  // attn_q: 1 row x K 64 x N 64, padded 32 x 64 x 64 = 131072 MACs at a8 cost 0.5 over 1e9/s
  // = 65.536 us; bytes 64*64 (8-bit) + 64*4 scales + (64+64) activations = 4480 over 1e9 B/s
  // = 4.48 us; time max(compute + 1 us overhead, transfer).
  const OpCost& q = Op(g, "blk.0.attn_q");
  EXPECT_EQ(q.macs, 4096u);
  EXPECT_DOUBLE_EQ(q.bytes, 4480);
  EXPECT_NEAR(q.time_s, 66.536e-6, 1e-12);
  EXPECT_EQ(q.bound, CostBound::kCompute);
  // attention over 64 positions: the 2 query heads share the kv head, so rows pad(1*2) = 32;
  // 2 products x 32 rows x 64 positions x 32 dims = 131072 padded MACs -> 65.536 us; softmax
  // 1*2*64 = 128 elements at 1e6/s = 128 us; compute 193.536 us. Bytes: KV 2*64*32 = 4096,
  // q and out 2*2*32 = 128, new k and v 2*32 = 64 -> 4288 B = 4.288 us. + 1 us.
  const OpCost& a = Op(g, "blk.0.attn");
  EXPECT_EQ(a.macs, 2u * 2 * 64 * 32);
  EXPECT_DOUBLE_EQ(a.bytes, 4288);
  EXPECT_NEAR(a.time_s, 194.536e-6, 1e-12);
  // ffn_norm: 64 elements at 1e6/s = 64 us; bytes (1+1)*64 + 64*2 weight = 256. + 1 us.
  const OpCost& n = Op(g, "blk.0.ffn_norm");
  EXPECT_DOUBLE_EQ(n.bytes, 256);
  EXPECT_NEAR(n.time_s, 65e-6, 1e-12);
  // ffn_down: K 96 -> N 64; padded 32 x 96 x 64 = 196608 x 0.5 / 1e9 = 98.304 us; + 1 us.
  EXPECT_NEAR(Op(g, "blk.0.ffn_down").time_s, 99.304e-6, 1e-12);
  // token_embd on the CPU: 64 elements x (1 B out + 1 B weight) = 128 B over 1e9 = 0.128 us,
  // + 5 us, so the overhead bounds it.
  const OpCost& e = Op(g, "token_embd");
  EXPECT_EQ(e.unit, ComputeUnit::kCpu);
  EXPECT_NEAR(e.time_s, 5.128e-6, 1e-12);
  EXPECT_EQ(e.bound, CostBound::kOverhead);
  // lm_head (tied): K 64 -> N 100, padded 32 x 64 x 128 = 262144 x 0.5 / 1e9 = 131.072 us.
  EXPECT_NEAR(Op(g, "output").time_s, 132.072e-6, 1e-12);
  // Views move nothing and are left out: the embedding, 15 block ops (2 norms, 7 matmuls, 2
  // ropes, attention, 2 residual adds, swiglu), the final norm and lm_head.
  EXPECT_EQ(g.ops.size(), 18u);
  EXPECT_EQ(g.npu_ops, 17);
  EXPECT_EQ(g.cpu_ops, 1);
  double sum = 10e-6;
  for (const OpCost& op : g.ops) sum += op.time_s;
  EXPECT_DOUBLE_EQ(g.total_s, sum);
}

TEST(CostModelTest, ActivationWidthScalesMatrixTime) {
  // w8a16: cost 1 (twice a8's 0.5): attn_q compute 131.072 us; bytes 4096+256+128*2 = 4608.
  const GraphCost a16 = Decode(RoundChip(), "w8a16", 64);
  const OpCost& q = Op(a16, "blk.0.attn_q");
  EXPECT_NEAR(q.time_s, 132.072e-6, 1e-12);
  EXPECT_DOUBLE_EQ(q.bytes, 4608);
  // w4f16: fp16 cost 3 -> 393.216 us, plus 64*64 weights widened to fp16 at 1e9/s = 4.096 us;
  // 4-bit weights: 2048 + 256 + 256 = 2560 bytes.
  const GraphCost f16 = Decode(RoundChip(), "w4f16", 64);
  const OpCost& f = Op(f16, "blk.0.attn_q");
  EXPECT_NEAR(f.compute_s, 397.312e-6, 1e-12);
  EXPECT_NEAR(f.time_s, 398.312e-6, 1e-12);
  EXPECT_DOUBLE_EQ(f.bytes, 2560);
}

TEST(CostModelTest, BandwidthBoundWhenTheKvCacheIsLong) {
  // 4096 positions with fast units: KV 2*4096*32*1 = 262144 B plus q, out, new k and v
  // (128 + 64 B) over 1e9 B/s outweigh 8.4 M padded MACs and 8192 softmax elements at 1e12/s.
  Chip chip = RoundChip();
  chip.cost.vec_elems_per_s_per_context = 1e12;
  chip.cost.hmx_macs_per_s = 1e12;
  const GraphCost long_kv = Decode(chip, "w8a8", 4096);
  const OpCost& a = Op(long_kv, "blk.0.attn");
  EXPECT_EQ(a.bound, CostBound::kBandwidth);
  EXPECT_NEAR(a.memory_s, (262144.0 + 128 + 64) / 1e9, 1e-15);
  // The op's set-up (1 us) overlaps the transfer: the time is the transfer alone.
  EXPECT_DOUBLE_EQ(a.time_s, a.memory_s);
}

TEST(CostModelTest, OverheadBoundWhenTheOpIsTiny) {
  // ffn_norm of one row with fast units: 64 elements at 1e12/s = 64 ps of compute and 256 B at
  // 1e9 B/s = 0.256 us of transfer, under the 1 us set-up: time = compute + overhead.
  Chip chip = RoundChip();
  chip.cost.vec_elems_per_s_per_context = 1e12;
  const GraphCost g = Decode(chip, "w8a8", 64);
  const OpCost& n = Op(g, "blk.0.ffn_norm");
  EXPECT_EQ(n.bound, CostBound::kOverhead);
  EXPECT_NEAR(n.time_s, 1e-6 + 64e-12, 1e-15);
}

TEST(CostModelTest, ActivationsBeyondVtcmSlowTheMatrixUnit) {
  // A 32-token w8a8 chunk: attn_q reads 32 x 64 one-byte activations = 2048 B. Padded
  // 32 x 64 x 64 = 131072 MACs x 0.5 / 1e9 = 65.536 us while they fit in VTCM ...
  Chip chip = RoundChip();
  chip.vtcm_mb = 4096.0 / (1024 * 1024);
  EXPECT_NEAR(Op(Phase(chip, "w8a8", 32, 64), "blk.0.attn_q").time_s, 66.536e-6, 1e-12);
  // ... and twice that (vtcm_spill_cost 2) once they fill it; a decode step still fits.
  chip.vtcm_mb = 2048.0 / (1024 * 1024);
  EXPECT_NEAR(Op(Phase(chip, "w8a8", 32, 64), "blk.0.attn_q").time_s, 132.072e-6, 1e-12);
  EXPECT_NEAR(Op(Decode(chip, "w8a8", 64), "blk.0.attn_q").time_s, 66.536e-6, 1e-12);
}

TEST(CostModelTest, SixteenBitAttentionFallsBackWithoutAct16) {
  Chip chip = RoundChip();
  chip.act16 = false;
  chip.name = "old";
  chip.hexagon = "v68";
  const GraphCost g = Decode(chip, "w8a16", 64);
  const OpCost& a = Op(g, "blk.0.attn");
  EXPECT_EQ(a.unit, ComputeUnit::kCpu);
  EXPECT_NE(a.placement.find("16-bit activations"), std::string::npos) << a.placement;
  EXPECT_EQ(g.cpu_ops, 2);
  // 8-bit activations stay on the NPU.
  EXPECT_EQ(Op(Decode(chip, "w8a8", 64), "blk.0.attn").unit, ComputeUnit::kNpu);
}

TEST(CostModelTest, RefusesFp16OnAChipWithoutIt) {
  Chip chip = RoundChip();
  chip.fp16 = false;
  auto model = ShapeOnlyModel(TinyConfig());
  ASSERT_TRUE(model.has_value());
  auto graph = (*model)->BuildGraph({.tokens = 1});
  ASSERT_TRUE(graph.has_value());
  auto cost = CostGraph(*graph, chip, *FindRecipe("w4f16"), 64);
  ASSERT_FALSE(cost.has_value());
  EXPECT_EQ(cost.error().code, ErrorCode::kUnsupported);
  EXPECT_NE(cost.error().message.find("FP16"), std::string::npos);
  // A chunk longer than the static context is refused too.
  auto chunk = (*model)->BuildGraph({.tokens = 128});
  ASSERT_TRUE(chunk.has_value());
  EXPECT_FALSE(CostGraph(*chunk, RoundChip(), *FindRecipe("w8a8"), 64).has_value());
}

TEST(CostModelTest, UnknownRecipeListsTheRecipes) {
  auto recipe = FindRecipe("w3a7");
  ASSERT_FALSE(recipe.has_value());
  EXPECT_NE(recipe.error().message.find("w4a16, w8a16, w8a8, w4f16"), std::string::npos)
      << recipe.error().message;
}

}  // namespace
}  // namespace kite
