// embedding: the NPU can gather rows of a quantized table (docs/npusim.md §10), but a deployment
// looks the token ids up in the runtime, on the CPU, as the vendor's LLM runtime does: the table
// (vocab × hidden) is the largest weight and a row gather needs no matrix unit; the runtime
// writes the rows at the NPU's activation width. So the verdict is "supported, run by the
// runtime" (NpuVerdict::runtime). A gather by another index (the positions, in decompose_rope's
// sin/cos tables) is the NPU's.
#include "backends/npusim/support/rules.h"

namespace kite::npu_rules {

NpuVerdict Embedding(const Graph& graph, const Node& node, const NpuTarget& target) {
  const SupportResult gate = Fp16Gate(graph, node, target);
  if (!gate.ok) return {gate};
  if (graph.value(node.inputs[1]).kind == ValueKind::kInput) {
    return {SupportResult::Yes(), Decomposition::kNone,
            "embedding: a row gather, done by the runtime"};
  }
  return {SupportResult::Yes()};
}

}  // namespace kite::npu_rules
