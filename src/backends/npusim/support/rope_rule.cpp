// RoPE on the NPU: the fused rotary-embedding op (QNN added RotaryEmbedding to its HTP op set in
// SDK 2.45, docs.qualcomm.com 80-63442-10 "QNN HTP Op Support Revision History") computes the
// angles and their sin/cos in fp16. A chip without FP16 cannot run it; graph/passes/
// decompose_rope.h rewrites it into ops every chip runs: a gather of precomputed sin/cos table
// rows by position (tables computed in double at compile time, stored as integers on the NPU),
// two products and a sum — which also avoids fp16's loss of angle precision at large positions.
#include "backends/npusim/support/rules.h"

namespace kite::npu_rules {

NpuVerdict Rope(const Graph& graph, const Node& node, const NpuTarget& target) {
  const SupportResult gate = Fp16Gate(graph, node, target);
  if (!gate.ok) return {gate};
  if (target.chip.fp16) return {SupportResult::Yes()};
  return {SupportResult::No("rope: sin/cos in fp16 unsupported on " + target.chip.Label() +
                            "; decomposed into sin/cos tables (decompose_rope)"),
          Decomposition::kRopeTables};
}

}  // namespace kite::npu_rules
