// Element-wise and normalising ops (add, mul, rms_norm, silu, gelu, swiglu, geglu, softmax) and
// the convert ops (quantize, dequantize) run on the NPU's vector unit (HVX) at 8 or 16 bits on
// every chip, through lookup tables where they are non-linear (docs/npusim.md); the only gate is
// fp16 on a chip without FP16.
#include "backends/npusim/support/rules.h"

namespace kite::npu_rules {

NpuVerdict Elementwise(const Graph& graph, const Node& node, const NpuTarget& target) {
  return {Fp16Gate(graph, node, target)};
}

}  // namespace kite::npu_rules
