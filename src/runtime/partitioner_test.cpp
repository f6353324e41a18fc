#include "runtime/partitioner.h"

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <set>

#include "graph/builder.h"

namespace kite {
namespace {

// A backend that declines the ops it is told to, with a reason naming the op.
class DecliningBackend final : public Backend {
 public:
  DecliningBackend(std::string name, std::set<OpKind> declined)
      : name_(std::move(name)), declined_(std::move(declined)) {}
  std::string_view name() const override { return name_; }
  SupportResult Supports(const Graph&, const Node& node) const override {
    if (node.is_view()) ADD_FAILURE() << "the partitioner asked about a view";
    if (declined_.count(node.op())) {
      return SupportResult::No("no " + std::string(node.op_name()) + " kernel");
    }
    return SupportResult::Yes();
  }
  std::optional<double> Cost(const Graph&, const Node& node) const override {
    const auto it = costs.find(node.op());
    return it == costs.end() ? std::nullopt : std::optional<double>(it->second);
  }
  std::map<OpKind, double> costs;  // what it says a node of each op costs; none: it cannot say

 private:
  std::string name_;
  std::set<OpKind> declined_;
};

// x -> rms_norm -> matmul -> silu -> reshape (view) -> add -> softmax
Graph TestGraph(const std::vector<float>& weights) {
  GraphBuilder b;
  const ValueId x = *b.Input("x", DType::kF32, {2, 4});
  const ValueId norm_w = *b.Weight({.name = "norm.weight",
                                    .dtype = DType::kF32,
                                    .shape = {4},
                                    .data = weights.data(),
                                    .bytes = 16});
  const ValueId proj_w = *b.Weight({.name = "proj.weight",
                                    .dtype = DType::kF32,
                                    .shape = {4, 4},
                                    .data = weights.data(),
                                    .bytes = 64});
  const ValueId norm = *b.RmsNorm("norm", x, norm_w, 1e-5f);
  const ValueId proj = *b.MatMul("proj", norm, proj_w);
  const ValueId act = *b.Silu("act", proj);
  const ValueId flat = *b.Reshape("flat", act, {8});
  const ValueId flat_x = *b.Reshape("flat_x", x, {8});
  const ValueId sum = *b.Add("residual", flat, flat_x);
  const ValueId probs = *b.Softmax("probs", sum);
  EXPECT_TRUE(b.MarkOutput(probs));
  return *std::move(b).Finish();
}

// A later backend wins a node on cost only when the preferred one states a cost too, a higher
// one; refusals are kept for the backends preferred over the winner.
TEST(Partitioner, ALowerCostWinsOverPreference) {
  const std::vector<float> weights(16, 0.5f);
  const Graph graph = TestGraph(weights);
  DecliningBackend npu("npu", {OpKind::kSoftmax});
  DecliningBackend cpu("cpu", {OpKind::kSilu});
  DecliningBackend fallback("fallback", {});
  npu.costs = {{OpKind::kRmsNorm, 2.0}, {OpKind::kMatMul, 1.0}, {OpKind::kAdd, 1.0}};
  cpu.costs = {{OpKind::kRmsNorm, 1.0}, {OpKind::kMatMul, 3.0}};  // add: cpu cannot say
  fallback.costs = {{OpKind::kSilu, 0.5}, {OpKind::kSoftmax, 0.1}};
  Backend* backends[] = {&npu, &cpu, &fallback};
  const Result<Placement> placement = PartitionGraph(graph, backends);
  ASSERT_TRUE(placement.has_value()) << placement.error().message;

  // Nodes: 0 norm, 1 proj, 2 act, 3 flat (view), 4 flat_x (view), 5 residual, 6 probs.
  // norm: cpu is cheaper; proj: npu is; act: npu states no cost, so preference keeps it;
  // residual: cpu states none, npu keeps it; probs: npu declines, cpu has no cost for it.
  const std::vector<int32_t> expected_backend = {1, 0, 0, 0, 0, 0, 1};
  ASSERT_EQ(placement->nodes.size(), expected_backend.size());
  for (size_t i = 0; i < expected_backend.size(); ++i) {
    EXPECT_EQ(placement->nodes[i].backend, expected_backend[i]) << "node " << i;
  }
  EXPECT_TRUE(placement->nodes[0].declined.empty());  // npu ran it, only dearer
  ASSERT_EQ(placement->nodes[6].declined.size(), 1u);
  EXPECT_EQ(placement->nodes[6].declined[0].backend, "npu");

  // With a cost for probs on cpu too, the fallback's lower one wins; npu's refusal is kept (cpu
  // ran it, so it did not refuse).
  cpu.costs[OpKind::kSoftmax] = 0.2;
  const Result<Placement> cheaper = PartitionGraph(graph, backends);
  ASSERT_TRUE(cheaper.has_value()) << cheaper.error().message;
  EXPECT_EQ(cheaper->nodes[6].backend, 2);
  ASSERT_EQ(cheaper->nodes[6].declined.size(), 1u);
  EXPECT_EQ(cheaper->nodes[6].declined[0].backend, "npu");
}

TEST(Partitioner, FirstSupportingBackendWinsAndReasonsAreKept) {
  const std::vector<float> weights(16, 0.5f);
  const Graph graph = TestGraph(weights);
  DecliningBackend npu("npu", {OpKind::kRmsNorm, OpKind::kSoftmax});
  DecliningBackend cpu("cpu", {OpKind::kSoftmax});
  DecliningBackend fallback("fallback", {});
  Backend* backends[] = {&npu, &cpu, &fallback};
  const Result<Placement> placement = PartitionGraph(graph, backends);
  ASSERT_TRUE(placement.has_value()) << placement.error().message;

  // Nodes: 0 norm, 1 proj, 2 act, 3 flat (view), 4 flat_x (view), 5 residual, 6 probs.
  const std::vector<int32_t> expected_backend = {1, 0, 0, 0, 0, 0, 2};
  ASSERT_EQ(placement->nodes.size(), expected_backend.size());
  for (size_t i = 0; i < expected_backend.size(); ++i) {
    EXPECT_EQ(placement->nodes[i].backend, expected_backend[i]) << "node " << i;
  }
  ASSERT_EQ(placement->nodes[0].declined.size(), 1u);
  EXPECT_EQ(placement->nodes[0].declined[0].backend, "npu");
  EXPECT_EQ(placement->nodes[0].declined[0].reason, "no rms_norm kernel");
  ASSERT_EQ(placement->nodes[6].declined.size(), 2u);
  EXPECT_EQ(placement->nodes[6].declined[1].backend, "cpu");
  EXPECT_TRUE(placement->nodes[1].declined.empty());

  // Views join the run they sit in, so npu gets one partition of nodes 1..5.
  ASSERT_EQ(placement->partitions.size(), 3u);
  EXPECT_EQ(placement->partitions[0].backend, 1);
  EXPECT_EQ(placement->partitions[0].begin, 0);
  EXPECT_EQ(placement->partitions[0].end, 1);
  EXPECT_EQ(placement->partitions[1].backend, 0);
  EXPECT_EQ(placement->partitions[1].begin, 1);
  EXPECT_EQ(placement->partitions[1].end, 6);
  EXPECT_EQ(placement->partitions[2].backend, 2);
  EXPECT_EQ(placement->partitions[2].begin, 6);

  const std::string report = placement->Report(graph);
  EXPECT_NE(report.find("rms_norm"), std::string::npos) << report;
  EXPECT_NE(report.find("npu: no rms_norm kernel"), std::string::npos) << report;
  EXPECT_NE(report.find("npu: no softmax kernel; cpu: no softmax kernel"), std::string::npos)
      << report;
  EXPECT_NE(report.find("(view: no kernel)"), std::string::npos) << report;
  EXPECT_NE(report.find("partition 1: npu, nodes 1..5 (5)"), std::string::npos) << report;
}

TEST(Partitioner, LeadingViewsJoinTheFirstNodesBackend) {
  GraphBuilder b;
  const ValueId x = *b.Input("x", DType::kF32, {2, 4});
  const ValueId flat = *b.Reshape("flat", x, {8});
  ASSERT_TRUE(b.MarkOutput(*b.Silu("act", flat)));
  const Graph graph = *std::move(b).Finish();
  DecliningBackend npu("npu", {OpKind::kSilu});
  DecliningBackend cpu("cpu", {});
  Backend* backends[] = {&npu, &cpu};
  const Placement placement = *PartitionGraph(graph, backends);
  EXPECT_EQ(placement.nodes[0].backend, 1);
  ASSERT_EQ(placement.partitions.size(), 1u);
  EXPECT_EQ(placement.partitions[0].end, 2);
}

TEST(Partitioner, NodeNobodySupportsIsAnErrorWithEveryReason) {
  const std::vector<float> weights(16, 0.5f);
  const Graph graph = TestGraph(weights);
  DecliningBackend npu("npu", {OpKind::kSoftmax});
  DecliningBackend cpu("cpu", {OpKind::kSoftmax, OpKind::kAdd});
  Backend* backends[] = {&npu, &cpu};
  const Result<Placement> placement = PartitionGraph(graph, backends);
  ASSERT_FALSE(placement.has_value());
  EXPECT_EQ(placement.error().code, ErrorCode::kUnsupported);
  EXPECT_EQ(placement.error().message,
            "node 'probs' (softmax) is supported by no backend; npu: no softmax kernel; "
            "cpu: no softmax kernel");
  EXPECT_FALSE(PartitionGraph(graph, {}).has_value());
}

}  // namespace
}  // namespace kite
