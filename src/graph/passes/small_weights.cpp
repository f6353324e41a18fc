#include "graph/passes/small_weights.h"

#include <cstring>

namespace kite {

Result<ValueId> AddF32Weight(GraphRewriter& rw, WeightStore& store, std::string name,
                             std::vector<int64_t> shape, std::span<const float> values) {
  AlignedBuffer buffer = KITE_TRY(AlignedBuffer::Allocate(values.size_bytes()));
  std::memcpy(buffer.data(), values.data(), values.size_bytes());
  const TensorView view =
      KITE_TRY(store.AddBuffer(std::move(name), DType::kF32, std::move(shape), std::move(buffer)));
  return rw.builder().Weight(view);
}

Status CheckNodesAre(const Graph& graph, const std::set<std::string>& wanted, std::string_view op,
                     std::string_view pass) {
  std::set<std::string> found;
  for (const Node& node : graph.nodes()) {
    if (node.op_name() == op && wanted.contains(node.name)) found.insert(node.name);
  }
  for (const std::string& name : wanted) {
    if (!found.contains(name)) {
      return InvalidInput(std::string(pass) + ": '" + name + "' is no " + std::string(op) +
                          " node of the graph");
    }
  }
  return {};
}

}  // namespace kite
