// embedding: the lookup of the token ids is done by the runtime on the CPU, as the vendor's LLM
// runtime does: the table (vocab × hidden) is the largest weight and a row gather needs no
// matrix unit; the runtime writes the rows at the NPU's activation width. A gather by another
// index (the positions, in decompose_rope's sin/cos tables) runs on the NPU.
#include "backends/npusim/support/rules.h"

namespace kite::npu_rules {

NpuVerdict Embedding(const Graph& graph, const Node& node, const NpuTarget& target) {
  if (graph.value(node.inputs[1]).kind == ValueKind::kInput &&
      graph.value(node.inputs[1]).name == "tokens") {
    return {SupportResult::No("embedding: a row gather, done by the runtime")};
  }
  return {Fp16Gate(graph, node, target)};
}

}  // namespace kite::npu_rules
