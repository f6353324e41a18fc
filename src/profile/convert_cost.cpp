#include "profile/convert_cost.h"

#include <algorithm>
#include <set>
#include <utility>

#include "tensor/tensor.h"

namespace kite {

std::vector<std::vector<OpCost>> ConvertCosts(const Graph& graph,
                                              std::span<const ComputeUnit> units, const Chip& chip,
                                              const Recipe& recipe) {
  const std::span<const Node> nodes = graph.nodes();
  std::vector<std::vector<OpCost>> out(nodes.size());
  std::set<std::pair<int32_t, ComputeUnit>> done;  // (producer, the unit converted to)
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].is_view()) continue;
    for (ValueId id : nodes[i].inputs) {
      const Value& memory = graph.memory_of(graph.value(id));  // through views to the writer
      if (memory.kind != ValueKind::kNode) continue;
      const int32_t producer = memory.producer;
      if (units[producer] == units[i] || nodes[producer].op() == OpKind::kEmbedding) continue;
      if (!done.insert({producer, units[i]}).second) continue;
      const bool to_cpu = units[i] == ComputeUnit::kCpu;
      OpCost cost;
      cost.node = nodes[producer].name + (to_cpu ? ".to_cpu" : ".to_npu");
      cost.op = std::string(kConvertOp);
      cost.unit = ComputeUnit::kNpu;
      cost.placement = to_cpu ? "dequantize for " + nodes[i].name + " on the CPU"
                              : "quantize " + nodes[producer].name + "'s output for the NPU";
      cost.shape = ShapeString(memory.shape);
      cost.bytes = static_cast<double>(memory.elements()) * (recipe.act_bytes + 4);
      cost.memory_s = cost.bytes / (chip.cost.dram_efficiency * chip.dram_peak_gbs * 1e9);
      cost.overhead_s = chip.cost.op_overhead_us * 1e-6;
      cost.time_s = cost.memory_s + cost.overhead_s;
      cost.bound = cost.overhead_s > cost.memory_s ? CostBound::kOverhead : CostBound::kBandwidth;
      out[producer].push_back(std::move(cost));
    }
  }
  return out;
}

}  // namespace kite
