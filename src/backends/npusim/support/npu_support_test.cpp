// The npusim support rules on the committed chip files: one decode block, asked on v68 (888 and
// the automotive sa8295p), v69 (8gen1), v73 (8gen2) and v75 (8gen3), differs exactly where the
// chips' features do, with the reason naming the chip and what to change.
#include "backends/npusim/support/npu_support.h"

#include <gtest/gtest.h>

#include <map>

#include "backends/npusim/npusim_backend.h"
#include "backends/registry.h"
#include "graph/builder.h"
#include "graph/testing.h"

namespace kite {
namespace {

using testing::Contains;

ChipFeatures Chip(const std::string& name) {
  auto chip = ReadChipFile(DefaultChipsDir(), name);
  EXPECT_TRUE(chip.has_value()) << chip.error().message;
  return chip ? chip->features : ChipFeatures{};
}

// x -> attn_q, attn_k, attn_v (LPBQ int4 weights) -> rope q, k -> attention -> out, and a
// product of two activations (x · xᵀ, the weight side an activation).
struct Block {
  testing::FakeWeights weights;
  Graph graph;

  explicit Block(int64_t head_dim = 128) {
    const int64_t T = 1, H = 2, D = head_dim, hidden = H * D;
    GraphBuilder b;
    const ValueId x = *b.Input("x", DType::kF32, {T, hidden});
    const ValueId positions = *b.Input("positions", DType::kI32, {T});
    QuantEncoding lpbq;
    lpbq.bits = 4;
    lpbq.is_signed = true;
    lpbq.granularity = EncodingGranularity::kLpbq;
    lpbq.axis = 0;
    lpbq.block_axis = 1;
    lpbq.block_size = 64;
    lpbq.scales.assign(hidden, 0.01f);
    lpbq.multipliers.assign(hidden * (hidden / 64), 1);
    auto weight = [&](const char* name) {
      auto w = b.Weight(weights.View(name, {hidden, hidden}, DType::kI4), lpbq);
      EXPECT_TRUE(w.has_value()) << w.error().message;
      return *w;
    };
    const ValueId q = *b.MatMul("attn_q", x, weight("wq"));
    const ValueId k = *b.MatMul("attn_k", x, weight("wk"));
    const ValueId v = *b.MatMul("attn_v", x, weight("wv"));
    RopeAttrs rope;
    rope.rotary_dim = static_cast<int32_t>(D);
    const ValueId q3 = *b.Rope("rope_q", *b.Reshape("q3", q, {T, H, D}), positions, rope);
    const ValueId k3 = *b.Rope("rope_k", *b.Reshape("k3", k, {T, H, D}), positions, rope);
    const ValueId a = *b.Attention("attn", q3, k3, *b.Reshape("v3", v, {T, H, D}), positions,
                                   AttentionAttrs{.scale = 0.1f});
    EXPECT_TRUE(b.MarkOutput(a).has_value());
    EXPECT_TRUE(b.MarkOutput(*b.MatMul("gram", x, x)).has_value());
    const ValueId norm_w = *b.Weight(weights.View("norm_w", {hidden}));
    EXPECT_TRUE(b.MarkOutput(*b.RmsNorm("norm", x, norm_w, 1e-5f)).has_value());
    auto built = std::move(b).Finish();
    EXPECT_TRUE(built.has_value()) << built.error().message;
    graph = std::move(*built);
  }

  // node name -> the rule's reason ("" when the NPU runs it)
  std::map<std::string, std::string> Reasons(const NpuTarget& target) const {
    std::map<std::string, std::string> out;
    for (const Node& node : graph.nodes()) {
      if (!node.is_view()) out[node.name] = NpuSupports(graph, node, target).reason;
    }
    return out;
  }
};

NpuTarget Target(const std::string& chip, ActivationKind activations = ActivationKind::kInt16) {
  return NpuTarget{.chip = Chip(chip), .activations = activations, .context = 4096, .kv_bytes = 2};
}

TEST(NpuSupportTest, ReasonsPerChipOnOneBlock) {
  const Block block;
  const auto v68 = block.Reasons(Target("888"));
  EXPECT_EQ(v68.at("rope_q"), "");  // integer sin/cos tables on every chip
  EXPECT_TRUE(Contains(v68.at("attn"),
                       "attention: 16-bit activations on both matmul inputs "
                       "(q·kᵀ) are unsupported on 888 (v68); use w8a8"));
  EXPECT_TRUE(Contains(v68.at("attn_q"),
                       "matmul: LPBQ weights (wq) need v73+; 888 (v68) has no "
                       "LPBQ"));
  EXPECT_TRUE(Contains(v68.at("gram"),
                       "matmul: 16-bit activations on the weight side need "
                       "v73+; 888 (v68)"));
  EXPECT_EQ(v68.at("norm"), "");

  // The automotive v68 has FP16 (fp16 activations run); 16 x 16 products and LPBQ do not.
  const auto sa8295p = block.Reasons(Target("sa8295p"));
  EXPECT_EQ(sa8295p.at("norm"), "");
  EXPECT_TRUE(Contains(sa8295p.at("attn"), "unsupported on sa8295p (v68)"));
  EXPECT_TRUE(Contains(sa8295p.at("attn_q"), "LPBQ"));

  // v69: FP16 and 16-bit products, no LPBQ.
  const auto v69 = block.Reasons(Target("8gen1"));
  EXPECT_EQ(v69.at("rope_q"), "");
  EXPECT_EQ(v69.at("attn"), "");
  EXPECT_EQ(v69.at("gram"), "");
  EXPECT_TRUE(Contains(v69.at("attn_q"), "8gen1 (v69) has no LPBQ"));

  // v73 and v75 run everything, and agree.
  const auto v73 = block.Reasons(Target("8gen2"));
  for (const auto& [node, reason] : v73) EXPECT_EQ(reason, "") << node;
  EXPECT_EQ(block.Reasons(Target("8gen3")), v73);
}

TEST(NpuSupportTest, EightBitActivationsKeepProductsOfActivationsOnAV68) {
  const Block block;
  const auto v68 = block.Reasons(Target("888", ActivationKind::kInt8));
  EXPECT_EQ(v68.at("attn"), "");
  EXPECT_EQ(v68.at("gram"), "");
}

TEST(NpuSupportTest, Fp16ActivationsNeedFp16) {
  const Block block;
  const auto v68 = block.Reasons(Target("888", ActivationKind::kFp16));
  EXPECT_TRUE(Contains(v68.at("norm"),
                       "rms_norm: fp16 activations need FP16, which 888 (v68) "
                       "lacks; quantize the activations to 16 bits"));
  EXPECT_EQ(block.Reasons(Target("8gen3", ActivationKind::kFp16)).at("norm"), "");
  EXPECT_EQ(block.Reasons(Target("sa8295p", ActivationKind::kFp16)).at("norm"), "");
}

TEST(NpuSupportTest, KvCacheMustFitInVtcm) {
  const Block block;  // head_dim 128, 2-byte KV: 512 B a position for K and V
  NpuTarget v68 = Target("888", ActivationKind::kInt8);  // 4 MB of VTCM
  v68.context = 8192;
  EXPECT_EQ(block.Reasons(v68).at("attn"), "");
  v68.context = 16384;
  EXPECT_EQ(block.Reasons(v68).at("attn"),
            "attention: KV of 16384 positions × 128 × 2 B × 2 (K and V) = 8 MB exceeds 888 "
            "(v68)'s VTCM (4 MB); compile for a context of at most 8192 or an 8-bit KV cache");
  NpuTarget v75 = Target("8gen3");  // 8 MB
  v75.context = 16384;
  EXPECT_EQ(block.Reasons(v75).at("attn"), "");
  v75.context = 32768;
  EXPECT_TRUE(Contains(block.Reasons(v75).at("attn"), "at most 16384"));
  v75.kv_bytes = 1;
  EXPECT_EQ(block.Reasons(v75).at("attn"), "");
}

// The backend applies the same VTCM rule at the context and KV type a run gives it (the engine
// passes its own; kite compile each compiled context).
TEST(NpuSupportTest, TheNpusimBackendChecksVtcmAtTheRunsContext) {
  const Block block;  // float values: npusim's FP16 path on 8gen3
  const Node* attention = nullptr;
  for (const Node& node : block.graph.nodes()) {
    if (node.name == "attn") attention = &node;
  }
  ASSERT_NE(attention, nullptr);
  auto verdict = [&](int64_t context, DType kv_dtype) {
    auto made =
        MakeBackends("npusim", {.chip = "8gen3", .context = context, .kv_dtype = kv_dtype});
    EXPECT_TRUE(made.has_value()) << made.error().message;
    return made ? made->front()->Supports(block.graph, *attention) : SupportResult::Yes();
  };
  const SupportResult fits = verdict(16384, DType::kF16);
  EXPECT_TRUE(fits.ok) << fits.reason;
  const SupportResult spills = verdict(32768, DType::kF16);
  EXPECT_FALSE(spills.ok);
  EXPECT_TRUE(Contains(spills.reason, "exceeds 8gen3 (v75)'s VTCM (8 MB); compile for a context "
                                      "of at most 16384 or an 8-bit KV cache"))
      << spills.reason;
  const SupportResult eight_bit = verdict(32768, DType::kQ8_0);
  EXPECT_TRUE(eight_bit.ok) << eight_bit.reason;
  EXPECT_TRUE(verdict(0, DType::kF16).ok);  // context unknown: not checked
}

// fp16 sin/cos lose the angle at large positions: with fp16 activations a rope is decomposed
// into tables computed in double; with integer activations it runs as it is.
TEST(NpuSupportTest, Fp16RopeIsDecomposed) {
  const Block block;
  int ropes = 0;
  for (const Node& node : block.graph.nodes()) {
    if (node.op() != OpKind::kRope) continue;
    ++ropes;
    const NpuVerdict fp16 = NpuRule(block.graph, node, Target("8gen3", ActivationKind::kFp16));
    EXPECT_EQ(fp16.decomposition, Decomposition::kRopeTables);
    EXPECT_TRUE(Contains(fp16.support.reason,
                         "rope: sin/cos in fp16 lose the angle at large "
                         "positions on 8gen3 (v75); decomposed"));
    EXPECT_TRUE(NpuRule(block.graph, node, Target("8gen3")).support.ok);
    // No FP16 at all: refused before any decomposition.
    const NpuVerdict v68 = NpuRule(block.graph, node, Target("888", ActivationKind::kFp16));
    EXPECT_EQ(v68.decomposition, Decomposition::kNone);
    EXPECT_TRUE(Contains(v68.support.reason, "fp16 activations need FP16"));
  }
  EXPECT_EQ(ropes, 2);
}

TEST(NpuSupportTest, TheTokenGatherIsTheRuntimes) {
  GraphBuilder b;
  testing::FakeWeights weights;
  const ValueId table = *b.Weight(weights.View("token_embd", {100, 16}));
  const ValueId tokens = *b.Input("tokens", DType::kI32, {3});
  ASSERT_TRUE(b.MarkOutput(*b.Embedding("token_embd", table, tokens)).has_value());
  const Graph graph = *std::move(b).Finish();
  const NpuVerdict verdict = NpuRule(graph, graph.nodes()[0], Target("8gen3"));
  EXPECT_TRUE(verdict.support.ok);  // the backend simulates it
  EXPECT_EQ(verdict.runtime, "embedding: a row gather, done by the runtime");
}

// A quantize -> dequantize graph states its widths: an 8-bit encoding before the dequantize
// makes the value 8-bit whatever the target assumes for plain f32.
TEST(NpuSupportTest, ActivationWidthComesFromTheEncodingBeforeADequantize) {
  GraphBuilder b;
  const ValueId x = *b.Input("x", DType::kF32, {2, 8});
  QuantEncoding u8;
  u8.scales = {0.1f};
  u8.offsets = {-128};
  const ValueId dq = *b.Dequantize("x.dq", *b.Quantize("x.q", x, u8));
  ASSERT_TRUE(b.MarkOutput(*b.MatMul("gram", dq, dq)).has_value());
  const Graph graph = *std::move(b).Finish();
  const NpuTarget v68 = Target("888");  // plain f32 counts as 16-bit
  EXPECT_EQ(ActivationOf(graph, x, v68), ActivationKind::kInt16);
  EXPECT_EQ(ActivationOf(graph, dq, v68), ActivationKind::kInt8);
  EXPECT_TRUE(NpuSupports(graph, graph.nodes().back(), v68).ok);
}

// The npusim backend is configured by chip file, so two chips of one generation keep their own
// features: the 888 and the SA8295P are both v68, and only the SA8295P runs fp16.
TEST(NpuSupportTest, EveryChipFileMakesAnNpusimBackendWithItsFeatures) {
  auto names = ListChips(DefaultChipsDir());
  ASSERT_TRUE(names.has_value()) << names.error().message;
  ASSERT_GE(names->size(), 8u);
  for (const std::string& name : *names) {
    auto backends = MakeBackends("npusim", BackendOptions{.chip = name});
    ASSERT_TRUE(backends.has_value()) << name << ": " << backends.error().message;
    const auto* npusim = dynamic_cast<const NpusimBackend*>(backends->front().get());
    ASSERT_NE(npusim, nullptr) << name;
    EXPECT_EQ(npusim->chip().name, name);
  }
  auto sa8295p = MakeBackends("npusim", BackendOptions{.chip = "sa8295p"});
  auto s888 = MakeBackends("npusim", BackendOptions{.chip = "888"});
  ASSERT_TRUE(sa8295p.has_value() && s888.has_value());
  const auto& a = dynamic_cast<const NpusimBackend&>(*sa8295p->front()).chip();
  const auto& b = dynamic_cast<const NpusimBackend&>(*s888->front()).chip();
  EXPECT_EQ(a.hexagon, b.hexagon);
  EXPECT_TRUE(a.fp16);
  EXPECT_FALSE(b.fp16);
  auto unknown = MakeBackends("npusim", BackendOptions{.chip = "v75"});
  ASSERT_FALSE(unknown.has_value());
  EXPECT_TRUE(Contains(unknown.error().message, "unknown chip 'v75'; the chips are: 888, "));
}

TEST(NpuSupportTest, UnknownChipListsTheChips) {
  auto chip = ReadChipFile(DefaultChipsDir(), "9gen9");
  ASSERT_FALSE(chip.has_value());
  EXPECT_TRUE(Contains(chip.error().message, "unknown chip '9gen9'; the chips are: 888, "));
}

}  // namespace
}  // namespace kite
