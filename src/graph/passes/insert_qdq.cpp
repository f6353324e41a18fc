#include "graph/passes/insert_qdq.h"

#include <set>

#include "graph/rewriter.h"

namespace kite {

Result<PassOutcome> InsertQdq::Run(const Graph& graph) {
  std::set<std::string> found;
  for (const Node& node : graph.nodes()) {
    if (!encodings_.contains(node.name)) continue;
    const Value& out = graph.value(node.output);
    if (node.is_view() || out.dtype != DType::kF32 || out.encoding) {
      return InvalidInput("insert_qdq: node '" + node.name + "' (" + std::string(node.op_name()) +
                          ") " + (node.is_view() ? "is a view" : "does not output f32") +
                          "; activation encodings apply to f32 node outputs");
    }
    found.insert(node.name);
  }
  for (const auto& [name, encoding] : encodings_) {
    if (!found.contains(name)) {
      return InvalidInput("insert_qdq: the activation encoding for '" + name +
                          "' names no node of the graph");
    }
  }
  GraphRewriter rewriter = KITE_TRY(GraphRewriter::Create(graph));
  int32_t changes = 0;
  Graph out = KITE_TRY(std::move(rewriter).Run(
      [&](GraphRewriter& rw, const Node& node) -> Result<std::optional<ValueId>> {
        auto it = encodings_.find(node.name);
        if (it == encodings_.end()) return std::nullopt;
        const ValueId value = KITE_TRY(rw.Copy(node));
        const ValueId q =
            KITE_TRY(rw.builder().Quantize(node.name + ".quantize", value, it->second));
        ++changes;
        return rw.builder().Dequantize(node.name + ".dequantize", q);
      }));
  return PassOutcome{.graph = std::move(out),
                     .changes = changes,
                     .summary = std::to_string(changes) + " activations quantized"};
}

}  // namespace kite
