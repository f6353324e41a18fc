// Fused attention on the NPU: q·kᵀ and p·v are products of two activations, and the KV cache of
// one kv head is streamed through VTCM, the memory the matrix unit's tiles live in.
// - 16-bit q and k need the chip's `act16` feature (16-bit × 16-bit products; QNN adds it with
//   v73, and sa8295p's calibration notes say it lacks it). No decomposition helps: the products
//   stay 16 × 16, so the node runs on the CPU; 8-bit activations keep it on the NPU.
// - K and V of one kv head over the whole static context must fit in VTCM together. Kite's
//   choice, not a vendor rule: the npusim kernel keeps them resident (docs/npusim.md); a longer
//   context runs on the CPU until the graph is compiled for a shorter one.
#include <cstdio>

#include "backends/npusim/support/rules.h"

namespace kite::npu_rules {

namespace {

std::string Megabytes(double bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%g MB", bytes / (1 << 20));
  return text;
}

}  // namespace

NpuVerdict Attention(const Graph& graph, const Node& node, const NpuTarget& target) {
  const SupportResult gate = Fp16Gate(graph, node, target);
  if (!gate.ok) return {gate};
  const std::string chip = target.chip.Label();
  const bool q16 = ActivationOf(graph, node.inputs[0], target) == ActivationKind::kInt16;
  const bool k16 = ActivationOf(graph, node.inputs[1], target) == ActivationKind::kInt16;
  if ((q16 || k16) && !target.chip.act16) {
    return {SupportResult::No(
        "attention: 16-bit activations on both matmul inputs (q·kᵀ) are unsupported on " + chip +
        "; use w8a8 to keep it on the NPU")};
  }
  if (target.context > 0) {
    const int64_t head_dim = graph.value(node.inputs[1]).shape[2];  // k [T, Hkv, D]
    const double kv = 2.0 * static_cast<double>(target.context * head_dim) * target.kv_bytes;
    const double vtcm = target.chip.vtcm_mb * (1 << 20);
    if (kv > vtcm) {
      const int64_t fits =
          static_cast<int64_t>(vtcm / (2.0 * static_cast<double>(head_dim) * target.kv_bytes));
      return {SupportResult::No(
          "attention: KV of " + std::to_string(target.context) + " positions × " +
          std::to_string(head_dim) + " × " + std::to_string(target.kv_bytes) +
          " B × 2 (K and V) = " + Megabytes(kv) + " exceeds " + chip + "'s VTCM (" +
          Megabytes(vtcm) + "); compile for a context of at most " + std::to_string(fits) +
          (target.kv_bytes > 1 ? " or an 8-bit KV cache" : ""))};
    }
  }
  return {SupportResult::Yes()};
}

}  // namespace kite::npu_rules
