// matmul on the NPU's matrix unit (HMX): activations × weights. The gates (chips/*.json "sources"
// say where each chip's feature comes from):
// - LPBQ weights (graph/encoding.h kLpbq) need the chip's `lpbq` feature. AIMET describes LPBQ as
//   block encodings that lie on a per-channel grid so that they run on per-channel kernels
//   (github.com/qualcomm/aimet, Docs/quantsim/blockwise.rst); which Hexagon versions decode the
//   per-block multipliers is not in the public QNN docs: Kite chooses v73 and later, as the chip
//   files state.
// - Plain per-block float scales (kPerBlock) are not run by the matrix unit on any chip: AIMET's
//   restrictions for the Qualcomm runtime put block scales on weights only, as LPBQ. Kite's
//   choice: refuse them with the re-encoding to ask for.
// - Block encodings must run along the input channels (dim 1 of W [N, K]): AIMET's restriction.
// - A weight side that is itself an activation (x · yᵀ of two node outputs) at 16 bits needs the
//   chip's `act16` feature (16-bit × 16-bit products); the QNN docs add it with v73.
#include "backends/npusim/support/rules.h"

namespace kite::npu_rules {

NpuVerdict MatMul(const Graph& graph, const Node& node, const NpuTarget& target) {
  const SupportResult gate = Fp16Gate(graph, node, target);
  if (!gate.ok) return {gate};
  const Value& w = graph.value(node.inputs[1]);  // [N, K]
  const std::string chip = target.chip.Label();
  if (w.kind == ValueKind::kWeight) {
    if (!w.encoding) return {SupportResult::Yes()};
    const QuantEncoding& e = *w.encoding;
    const bool blocked = e.granularity == EncodingGranularity::kPerBlock ||
                         e.granularity == EncodingGranularity::kLpbq;
    if (blocked && e.block_axis != 1) {
      return {SupportResult::No("matmul: weight " + w.name + " has blocks along dim " +
                                std::to_string(e.block_axis) +
                                "; the NPU takes blocks only along the input channels (dim 1 of "
                                "[N, K]); re-quantize with blocks along K")};
    }
    if (e.granularity == EncodingGranularity::kPerBlock) {
      return {SupportResult::No("matmul: weight " + w.name +
                                " has per-block float scales, which the NPU's matrix unit does "
                                "not apply; re-quantize it as LPBQ (per-channel scale × per-block "
                                "integer) or per channel")};
    }
    if (e.granularity == EncodingGranularity::kLpbq && !target.chip.lpbq) {
      return {SupportResult::No("matmul: LPBQ weights (" + w.name + ") need v73+; " + chip +
                                " has no LPBQ; re-quantize per channel (--recipe w8a16)")};
    }
    return {SupportResult::Yes()};
  }
  if (ActivationOf(graph, node.inputs[1], target) == ActivationKind::kInt16 && !target.chip.act16) {
    return {SupportResult::No("matmul: 16-bit activations on the weight side need v73+; " + chip +
                              " multiplies 16-bit activations only by 8-bit weights; use 8-bit "
                              "activations (--recipe w8a8)")};
  }
  return {SupportResult::Yes()};
}

}  // namespace kite::npu_rules
