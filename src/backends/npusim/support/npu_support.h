// One source of truth for "does this chip's NPU run this node, and if not, why": the rule per op
// kind (one file each: matmul_rule.cpp, attention_rule.cpp, ...) over the chip's features
// (chip_features.h). The npusim backend's Supports, `kite inspect --placement --chip` and the
// cost model (profile/cost_model.cpp) all ask here, so they never disagree.
//
// A refusal comes with a reason a user can act on and, where Kite has a graph pass that rewrites
// the node into ops the chip runs, the decomposition that pass makes (prepare_for_npu.h runs it);
// what stays refused runs on the CPU with explicit convert ops at the boundaries
// (graph/passes/explicit_fallback.h).
#pragma once

#include <cstdint>
#include <string>

#include "backends/backend.h"
#include "backends/npusim/support/chip_features.h"
#include "graph/graph.h"

namespace kite {

// What an activation is on the NPU: 8- or 16-bit integers under an encoding, or fp16.
enum class ActivationKind { kInt8, kInt16, kFp16 };

// The chip and what the graph does not say itself.
struct NpuTarget {
  ChipFeatures chip;
  // A plain f32 value (no encoding of its own, not the output of a dequantize) is taken to be
  // this on the NPU: the recipe the graph will be quantized with (`kite profile --recipe`), or,
  // for a graph that states its encodings, irrelevant.
  ActivationKind activations = ActivationKind::kInt16;
  int64_t context = 0;  // positions the KV cache holds; 0: unknown (no VTCM check)
  int kv_bytes = 2;     // bytes per KV element
};

enum class Decomposition : uint8_t {
  kNone,
  kRopeTables,      // graph/passes/decompose_rope.h: sin/cos tables, gather, mul, add
  kSoftcapSigmoid,  // graph/passes/decompose_softcap.h: cap·tanh(x/cap) as 2cap·σ(2x/cap) - cap
};

struct NpuVerdict {
  SupportResult support;
  // When the node is refused and a pass rewrites it into ops the chip runs.
  Decomposition decomposition = Decomposition::kNone;
  // Set when the NPU could run the node but a deployment runs it in the runtime, on the CPU, and
  // why (the token embedding's gather): the backend runs it (npusim computes the same numbers,
  // docs/npusim.md §10), the cost model prices it on the CPU.
  std::string runtime = {};
};

// NpuTarget::kv_bytes for a KV cache of `kv_dtype`: its whole bytes per element (q8_0's 34 bytes
// per 32 count as 1). InvalidInput for a type that cannot hold a KV cache.
Result<int> NpuKvBytes(DType kv_dtype);

// The rule for `node` (not a view) of `graph` on `target`.
NpuVerdict NpuRule(const Graph& graph, const Node& node, const NpuTarget& target);
// The backend's answer: NpuRule's, without the decomposition.
inline SupportResult NpuSupports(const Graph& graph, const Node& node, const NpuTarget& target) {
  return NpuRule(graph, node, target).support;
}

// What `id` is on the NPU: the width of its encoding, or of the encoding of the dequantize it
// comes from (a quantize -> dequantize graph, graph/passes/insert_qdq.h), else
// target.activations.
ActivationKind ActivationOf(const Graph& graph, ValueId id, const NpuTarget& target);
std::string_view ActivationName(ActivationKind kind);  // "8-bit", "16-bit", "fp16"

}  // namespace kite
