// RoPE on the NPU. With integer activations Kite's rope reads sin/cos from integer tables
// computed in double (docs/npusim.md §6.4, §9), on every chip. With fp16 activations the vendor
// path computes the angles and sin/cos in fp16, whose 11 significant bits lose the angle at large
// positions (§6.4: at position 30,000 it is rounded to a multiple of 16); Kite does not run that
// form: graph/passes/decompose_rope.h rewrites it into a gather of sin/cos table rows by position
// (the tables computed in double at compile time), two products and a sum. A chip without FP16
// refuses fp16 activations before that (Fp16Gate).
#include "backends/npusim/support/rules.h"

namespace kite::npu_rules {

NpuVerdict Rope(const Graph& graph, const Node& node, const NpuTarget& target) {
  const SupportResult gate = Fp16Gate(graph, node, target);
  if (!gate.ok) return {gate};
  if (ActivationOf(graph, node.inputs[0], target) != ActivationKind::kFp16) {
    return {SupportResult::Yes()};
  }
  return {SupportResult::No("rope: sin/cos in fp16 lose the angle at large positions on " +
                            target.chip.Label() +
                            "; decomposed into sin/cos tables computed in double (decompose_rope)"),
          Decomposition::kRopeTables};
}

}  // namespace kite::npu_rules
