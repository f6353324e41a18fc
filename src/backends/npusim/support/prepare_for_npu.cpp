#include "backends/npusim/support/prepare_for_npu.h"

#include <set>

#include "graph/passes/decompose_rope.h"
#include "graph/passes/decompose_softcap.h"
#include "graph/passes/explicit_fallback.h"
#include "graph/passes/pass_manager.h"

namespace kite {

namespace {

// The names of the nodes whose verdict on `target` is refusal with `decomposition`.
std::set<std::string> Refused(const Graph& graph, const NpuTarget& target,
                              Decomposition decomposition) {
  std::set<std::string> names;
  for (const Node& node : graph.nodes()) {
    if (node.is_view()) continue;
    const NpuVerdict verdict = NpuRule(graph, node, target);
    if (!verdict.support.ok && verdict.decomposition == decomposition) names.insert(node.name);
  }
  return names;
}

}  // namespace

Result<NpuGraph> PrepareForNpu(const Graph& graph, const NpuTarget& target, WeightStore* store) {
  NpuGraph out{.graph = graph.Copy()};
  auto run = [&](Pass& pass) -> Status {
    PassOutcome outcome = KITE_TRY(pass.Run(out.graph));
    // The pass manager's check (same interface, one id per weight's bytes), pass by pass: each
    // pass's nodes are chosen on the graph the one before made.
    Status verified = VerifyRewrite(out.graph, outcome.graph);
    if (!verified) return std::unexpected(std::move(verified.error()).WithContext(std::string(pass.name())));
    if (outcome.changes > 0)
      out.passes.push_back(std::string(pass.name()) + ": " + outcome.summary);
    out.graph = std::move(outcome.graph);
    return {};
  };
  if (std::set<std::string> ropes = Refused(out.graph, target, Decomposition::kRopeTables);
      !ropes.empty()) {
    if (target.context < 1) {
      return InvalidInput("decompose_rope: the sin/cos tables need the graph's context length");
    }
    DecomposeRope pass(store, std::move(ropes), target.context);
    KITE_RETURN_IF_ERROR(run(pass));
  }
  if (std::set<std::string> caps = Refused(out.graph, target, Decomposition::kSoftcapSigmoid);
      !caps.empty()) {
    DecomposeSoftcap pass(store, std::move(caps));
    KITE_RETURN_IF_ERROR(run(pass));
  }
  // The token embedding is the runtime's (a supported verdict), not a fallback.
  std::set<std::string> cpu = Refused(out.graph, target, Decomposition::kNone);
  if (!cpu.empty()) {
    ExplicitFallback pass(std::move(cpu));
    KITE_RETURN_IF_ERROR(run(pass));
  }
  return out;
}

}  // namespace kite
