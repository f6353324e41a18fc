// The device cost model (docs/cost_model.md): each op of a phase's graph priced on a chip as
// max(compute time + a per-op overhead, bytes moved / bandwidth reached), plus one per-graph
// overhead. tools/fit_cost_model.py is a second implementation of the same formulas (it fits the
// chip files' parameters); the tests hold the two together.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "graph/graph.h"
#include "profile/chip.h"
#include "profile/recipe.h"

namespace kite {

enum class ComputeUnit { kNpu, kCpu };
enum class CostBound { kCompute, kBandwidth, kOverhead };
std::string_view UnitName(ComputeUnit unit);   // "NPU", "CPU"
std::string_view BoundName(CostBound bound);  // "compute", "bandwidth", "overhead"

struct OpCost {
  std::string node;  // "blk.3.attn_q"
  std::string op;    // "matmul"
  int32_t layer = -1;  // the block the node belongs to, -1 outside the blocks
  ComputeUnit unit = ComputeUnit::kNpu;
  std::string placement;  // why this unit: "" on the NPU, the reason for a CPU fallback
  std::string shape;      // the output's shape
  double bytes = 0;       // moved to and from DRAM
  double weight_bytes = 0;
  uint64_t macs = 0;      // multiply-adds before tile padding
  double compute_s = 0, memory_s = 0, overhead_s = 0;
  double time_s = 0;  // NPU: max(compute_s + overhead_s, memory_s); CPU: max(...) + overhead_s
  CostBound bound = CostBound::kCompute;
};

struct GraphCost {
  int32_t tokens = 0;      // T of the phase
  int32_t static_ctx = 0;  // the context the compiled graph attends over
  std::vector<OpCost> ops;  // views left out: they move nothing
  double graph_overhead_s = 0;
  double total_s = 0;
  int32_t npu_ops = 0, cpu_ops = 0;  // converts among the NPU's
  int32_t converts = 0;  // convert ops at NPU <-> CPU boundaries (profile/convert_cost.h)
};

// Prices `graph` (a phase of T tokens, as models/ builds it) over a static context of
// `static_ctx` positions. Unsupported when the chip cannot run the recipe at all (fp16
// activations without FP16). Where each op runs is the npusim support rules' verdict
// (backends/npusim/support/npu_support.h): refused ops run on the CPU with the rule's reason, and
// each value crossing between NPU and CPU adds a convert op (profile/convert_cost.h) after the op
// that produced it.
Result<GraphCost> CostGraph(const Graph& graph, const Chip& chip, const Recipe& recipe,
                            int32_t static_ctx);

}  // namespace kite
