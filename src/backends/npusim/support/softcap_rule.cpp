// softcap, cap·tanh(x / cap) (Gemma 2's logit capping), has no fused NPU op on any chip (QNN's
// HTP op set has Tanh, but not the scaled form, and Kite's npusim spec has no tanh table). It is
// decomposed on every chip by graph/passes/decompose_softcap.h into ops the NPU runs: a matmul
// by a 2×1 weight, a softmax over the pair (a sigmoid), and a matmul with a bias.
#include "backends/npusim/support/rules.h"

namespace kite::npu_rules {

NpuVerdict Softcap(const Graph& graph, const Node& node, const NpuTarget& target) {
  const SupportResult gate = Fp16Gate(graph, node, target);
  if (!gate.ok) return {gate};
  return {SupportResult::No("softcap: no tanh op on the NPU (" + target.chip.Label() +
                            "); decomposed into a sigmoid (decompose_softcap)"),
          Decomposition::kSoftcapSigmoid};
}

}  // namespace kite::npu_rules
