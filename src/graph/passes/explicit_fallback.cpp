#include "graph/passes/explicit_fallback.h"

#include <map>

#include "graph/rewriter.h"

namespace kite {

Result<PassOutcome> ExplicitFallback::Run(const Graph& graph) {
  std::set<std::string> found;
  for (const Node& node : graph.nodes()) {
    if (cpu_nodes_.contains(node.name) && !node.is_view()) found.insert(node.name);
  }
  for (const std::string& name : cpu_nodes_) {
    if (!found.contains(name)) {
      return InvalidInput("explicit_fallback: '" + name + "' is no node of the graph (or a view)");
    }
  }
  GraphRewriter rewriter = KITE_TRY(GraphRewriter::Create(graph));
  std::map<int32_t, ValueId> dequantized;  // new encoded value -> its f32 form, for the CPU
  int32_t converts = 0;
  Graph out = KITE_TRY(std::move(rewriter).Run(
      [&](GraphRewriter& rw, const Node& node) -> Result<std::optional<ValueId>> {
        if (!cpu_nodes_.contains(node.name)) return std::nullopt;
        GraphBuilder& b = rw.builder();
        std::vector<ValueId> inputs;
        for (size_t i = 0; i < node.inputs.size(); ++i) {
          ValueId in = KITE_TRY(rw.Map(node.inputs[i]));
          const Value& v = b.value(in);
          // Encoded weights stay as they are: a CPU kernel decodes them as it reads.
          if (v.encoding && v.kind != ValueKind::kWeight) {
            auto it = dequantized.find(in.index);
            if (it == dequantized.end()) {
              const ValueId f32 =
                  KITE_TRY(b.Dequantize(node.name + ".to_cpu." + std::to_string(i), in));
              it = dequantized.emplace(in.index, f32).first;
              ++converts;
            }
            in = it->second;
          }
          inputs.push_back(in);
        }
        const std::optional<QuantEncoding>& encoding = graph.value(node.output).encoding;
        if (!encoding) return b.AddNode(node.name, node.attrs, std::move(inputs));
        const ValueId f32 = KITE_TRY(b.AddNode(node.name, node.attrs, std::move(inputs)));
        ++converts;
        return b.Quantize(node.name + ".to_npu", f32, *encoding);
      }));
  return PassOutcome{.graph = std::move(out),
                     .changes = converts,
                     .summary = std::to_string(cpu_nodes_.size()) + " nodes on the CPU, " +
                                std::to_string(converts) + " convert ops at their boundaries"};
}

}  // namespace kite
