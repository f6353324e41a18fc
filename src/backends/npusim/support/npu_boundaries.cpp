#include "backends/npusim/support/npu_boundaries.h"

#include <algorithm>
#include <set>
#include <utility>

namespace kite {

std::vector<NpuBoundary> NpuBoundaries(const Graph& graph, const std::vector<bool>& on_npu) {
  const std::span<const Node> nodes = graph.nodes();
  std::vector<NpuBoundary> out;
  std::set<std::pair<int32_t, bool>> seen;  // (producer, to_cpu)
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].is_view()) continue;
    for (ValueId id : nodes[i].inputs) {
      const Value& memory = graph.memory_of(graph.value(id));  // through views to the writer
      if (memory.kind != ValueKind::kNode) continue;
      const int32_t producer = memory.producer;
      if (on_npu[producer] == on_npu[i] || nodes[producer].op() == OpKind::kEmbedding) continue;
      const bool to_cpu = !on_npu[i];
      if (!seen.insert({producer, to_cpu}).second) continue;
      out.push_back({producer, static_cast<int32_t>(i), to_cpu});
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const NpuBoundary& a, const NpuBoundary& b) {
    return a.producer < b.producer;
  });
  return out;
}

}  // namespace kite
