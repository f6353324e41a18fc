// fold_channel_scale (graph/passes/) on the reference models of testdata/reference: folding a
// per-channel scale into every RMSNorm and its inverse into the matmuls reading it leaves the
// prefill logits unchanged within tolerance, on ref and on cpu. Edits that are NOT an identity
// (the norms alone, the matmuls alone) change the cpu logits, and agree with ref on the edited
// model: the cpu backend runs the new weights, not what it packed from the old ones on the same
// backend a moment before.
#include "graph/passes/fold_channel_scale.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/ref/ref_backend.h"
#include "graph/passes/pass_manager.h"
#include "graph/rewriter.h"
#include "models/load_model.h"
#include "runtime/testing.h"

namespace kite {
namespace {

const std::string kReference = KITE_SOURCE_DIR "/testdata/reference/";
// Token ids below every reference model's vocabulary (1000), at positions 0..12.
const std::vector<int32_t> kTokens = {1, 17, 250, 999, 3, 42, 7, 500, 2, 64, 128, 900, 11};

// Measured (max |difference| of the 13 x 1000 logits): a fold moves them 2e-6..7e-6 on ref and
// cpu; half a fold 6.7..9.6; cpu and ref agree on a half-folded model within 1.7e-5.
constexpr double kTolerance = 1e-4;

// A prefill of kTokens with every position's logits [T, vocab], on `backends` in order.
Result<std::vector<float>> RunPrefill(Graph graph, const ModelConfig& spec,
                                      std::vector<Backend*> backends) {
  return testing::PrefillLogits(std::move(graph), spec, std::move(backends), kTokens);
}

double MaxAbsDiff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double diff = a.size() == b.size() ? 0 : INFINITY;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    diff = std::max(diff, std::abs(static_cast<double>(a[i]) - b[i]));
  }
  return diff;
}

// A seeded scale in [0.5, 2) per channel for every rms_norm of `graph`: not powers of two, so
// the rescaled weights round differently from the originals.
std::vector<ChannelScale> ScalesFor(const Graph& graph) {
  std::mt19937 rng(8);
  std::uniform_real_distribution<float> dist(0.5f, 2.0f);
  std::vector<ChannelScale> scales;
  for (const Node& node : graph.nodes()) {
    if (node.op() != OpKind::kRmsNorm) continue;
    ChannelScale& scale = scales.emplace_back(ChannelScale{.norm = node.name, .scale = {}});
    scale.scale.resize(graph.value(node.output).shape.back());
    for (float& s : scale.scale) s = dist(rng);
  }
  return scales;
}

// scales plus a seeded scale on the output channels of every attn_v (folded through attention
// into attn_output, the KV heads' scales repeated over their query heads) and ffn_up (through
// swiglu into ffn_down). attn_v's weight is then rescaled twice: by its norm's, then by its own.
std::vector<ChannelScale> WithMatMulScales(const Graph& graph, std::vector<ChannelScale> scales) {
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> dist(0.5f, 2.0f);
  for (const Node& node : graph.nodes()) {
    if (node.op() != OpKind::kMatMul ||
        !(node.name.ends_with("attn_v") || node.name.ends_with("ffn_up"))) {
      continue;
    }
    ChannelScale& scale = scales.emplace_back(ChannelScale{.norm = node.name, .scale = {}});
    scale.scale.resize(graph.value(node.output).shape.back());
    for (float& s : scale.scale) s = dist(rng);
  }
  return scales;
}

// Half of the fold, on purpose: the norms' weights times s (`norms`), or the matmuls' weights
// divided by it (else). Not an identity: the logits must change.
Result<Graph> HalfFold(const Graph& graph, WeightStore& store,
                       const std::vector<ChannelScale>& scales, bool norms) {
  GraphRewriter rw = KITE_TRY(GraphRewriter::Create(graph));
  std::vector<const std::vector<float>*> scale_of(graph.num_values(), nullptr);  // norm outputs
  for (const ChannelScale& scale : scales) {
    for (const Node& node : graph.nodes()) {
      if (node.name == scale.norm) scale_of[node.output.index] = &scale.scale;
    }
  }
  return std::move(rw).Run(
      [&](GraphRewriter& rw, const Node& node) -> Result<std::optional<ValueId>> {
        const bool is_norm = node.op() == OpKind::kRmsNorm;
        const std::vector<float>* s = scale_of[is_norm ? node.output.index : node.inputs[0].index];
        if (s == nullptr || is_norm != norms || (!is_norm && node.op() != OpKind::kMatMul)) {
          return std::nullopt;
        }
        const TensorView w = KITE_TRY(
            ScaleColumns(store, node.name + ".half", graph.value(node.inputs[1]), *s, !is_norm));
        std::vector<ValueId> inputs;
        for (ValueId input : node.inputs) inputs.push_back(KITE_TRY(rw.Map(input)));
        inputs[1] = KITE_TRY(rw.builder().Weight(w));
        return rw.builder().AddNode(node.name, node.attrs, std::move(inputs));
      });
}

class FoldChannelScaleModels : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    auto model = LoadModel(kReference + GetParam());
    ASSERT_TRUE(model.has_value()) << model.error().message;
    model_ = std::move(*model);
    auto graph =
        model_->BuildGraph({.tokens = static_cast<int32_t>(kTokens.size()), .all_logits = true});
    ASSERT_TRUE(graph.has_value()) << graph.error().message;
    graph_ = std::move(*graph);
    scales_ = ScalesFor(graph_);
  }

  // The model's graph through fold_channel_scale with scales_, by the pass manager.
  Graph Folded() {
    PassManager passes;
    passes.Add(std::make_unique<FoldChannelScale>(&store_, scales_));
    std::vector<PassReport> report;
    auto folded = passes.Run(graph_.Copy(), &report);
    EXPECT_TRUE(folded.has_value()) << folded.error().message;
    // Every norm (2 per layer and the final one) and every matmul reading one: q, k, v, gate,
    // up per layer and lm_head.
    EXPECT_EQ(report.size(), 1u);
    EXPECT_EQ(report.empty() ? 0 : report[0].changes, model_->config().n_layers * 7 + 2);
    return folded ? std::move(*folded) : graph_.Copy();
  }

  std::vector<float> Run(Graph graph, std::vector<Backend*> backends) {
    auto logits = RunPrefill(std::move(graph), model_->config(), std::move(backends));
    EXPECT_TRUE(logits.has_value()) << logits.error().message;
    return logits ? std::move(*logits) : std::vector<float>{};
  }

  std::unique_ptr<Model> model_;
  Graph graph_;
  std::vector<ChannelScale> scales_;
  WeightStore store_;
  RefBackend ref_;
  CpuBackend cpu_{2};
};

TEST_P(FoldChannelScaleModels, LogitsUnchangedOnRef) {
  const std::vector<float> before = Run(graph_.Copy(), {&ref_});
  const std::vector<float> after = Run(Folded(), {&ref_});
  ASSERT_EQ(before.size(), kTokens.size() * model_->config().vocab);
  EXPECT_LT(MaxAbsDiff(before, after), kTolerance);
}

TEST_P(FoldChannelScaleModels, LogitsUnchangedOnCpu) {
  // Every node on cpu, one backend for both graphs: the folded graph's matmuls must be packed
  // from the new weights.
  const std::vector<float> before = Run(graph_.Copy(), {&cpu_});
  const std::vector<float> after = Run(Folded(), {&cpu_});
  ASSERT_EQ(before.size(), kTokens.size() * model_->config().vocab);
  EXPECT_LT(MaxAbsDiff(before, after), kTolerance);
}

TEST_P(FoldChannelScaleModels, MatMulOutputScalesLeaveLogitsUnchanged) {
  PassManager passes;
  passes.Add(std::make_unique<FoldChannelScale>(&store_, WithMatMulScales(graph_, scales_)));
  std::vector<PassReport> report;
  auto folded = passes.Run(graph_.Copy(), &report);
  ASSERT_TRUE(folded.has_value()) << folded.error().message;
  // The norms' folds, and per layer attn_v and ffn_up with one matmul each.
  ASSERT_EQ(report.size(), 1u);
  EXPECT_EQ(report[0].changes, model_->config().n_layers * (7 + 4) + 2);
  const std::vector<float> before = Run(graph_.Copy(), {&ref_});
  const std::vector<float> after = Run(std::move(*folded), {&ref_});
  ASSERT_EQ(before.size(), kTokens.size() * model_->config().vocab);
  EXPECT_LT(MaxAbsDiff(before, after), kTolerance);
}

TEST_P(FoldChannelScaleModels, HalfAFoldChangesCpuLogitsAsItDoesRefs) {
  const std::vector<float> before = Run(graph_.Copy(), {&cpu_});
  for (const bool norms : {true, false}) {
    SCOPED_TRACE(norms ? "norms only" : "matmuls only");
    auto edited = HalfFold(graph_, store_, scales_, norms);
    ASSERT_TRUE(edited.has_value()) << edited.error().message;
    const std::vector<float> on_cpu = Run(edited->Copy(), {&cpu_});
    const std::vector<float> on_ref = Run(std::move(*edited), {&ref_});
    EXPECT_GT(MaxAbsDiff(before, on_cpu), 1.0);         // the edit reached the cpu kernels
    EXPECT_LT(MaxAbsDiff(on_cpu, on_ref), kTolerance);  // and they ran it as ref does
  }
}

INSTANTIATE_TEST_SUITE_P(ReferenceModels, FoldChannelScaleModels,
                         ::testing::Values("llama-gqa", "qwen2-bias", "llama3-rope", "mistral",
                                           "llama-bias-linear"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name = info.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

}  // namespace
}  // namespace kite
