#include "profile/convert_cost.h"

#include <algorithm>

#include "backends/npusim/support/npu_boundaries.h"
#include "tensor/tensor.h"

namespace kite {

std::vector<std::vector<OpCost>> ConvertCosts(const Graph& graph,
                                              std::span<const ComputeUnit> units, const Chip& chip,
                                              const Recipe& recipe) {
  const std::span<const Node> nodes = graph.nodes();
  std::vector<bool> on_npu(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) on_npu[i] = units[i] == ComputeUnit::kNpu;
  std::vector<std::vector<OpCost>> out(nodes.size());
  for (const NpuBoundary& boundary : NpuBoundaries(graph, on_npu)) {
    const Node& producer = nodes[boundary.producer];
    const Value& value = graph.value(producer.output);
    OpCost cost;
    cost.node = producer.name + (boundary.to_cpu ? ".to_cpu" : ".to_npu");
    cost.op = std::string(kConvertOp);
    cost.unit = ComputeUnit::kNpu;
    cost.placement = boundary.to_cpu
                         ? "dequantize for " + nodes[boundary.reader].name + " on the CPU"
                         : "quantize " + producer.name + "'s output for the NPU";
    cost.shape = ShapeString(value.shape);
    cost.bytes = static_cast<double>(value.elements()) * (recipe.act_bytes + 4);
    cost.memory_s = cost.bytes / (chip.cost.dram_efficiency * chip.dram_peak_gbs * 1e9);
    cost.overhead_s = chip.cost.op_overhead_us * 1e-6;
    // As every NPU op (docs/cost_model.md §2): the transfer overlaps the op's setup.
    cost.time_s = std::max(cost.overhead_s, cost.memory_s);
    cost.bound = cost.memory_s > cost.overhead_s ? CostBound::kBandwidth : CostBound::kOverhead;
    out[boundary.producer].push_back(std::move(cost));
  }
  return out;
}

}  // namespace kite
