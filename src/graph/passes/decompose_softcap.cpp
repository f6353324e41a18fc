#include "graph/passes/decompose_softcap.h"

#include "graph/passes/small_weights.h"
#include "graph/rewriter.h"

namespace kite {

Result<PassOutcome> DecomposeSoftcap::Run(const Graph& graph) {
  KITE_RETURN_IF_ERROR(CheckNodesAre(graph, nodes_, "softcap", name()));
  GraphRewriter rewriter = KITE_TRY(GraphRewriter::Create(graph));
  int32_t changes = 0;
  Graph out = KITE_TRY(std::move(rewriter).Run([&](GraphRewriter& rw, const Node& node)
                                                   -> Result<std::optional<ValueId>> {
    if (!nodes_.contains(node.name)) return std::nullopt;
    const float cap = node.as<SoftcapAttrs>().cap;
    const ValueId x = KITE_TRY(rw.Map(node.inputs[0]));
    std::vector<int64_t> shape = rw.builder().value(x).shape;  // [..., N]
    std::vector<int64_t> column = shape;
    column.push_back(1);
    const float pair[] = {2.0f / cap, 0.0f};   // [2, 1]
    const float scale[] = {2.0f * cap, 0.0f};  // [1, 2]
    const float bias[] = {-cap};
    const ValueId w_pair = KITE_TRY(AddF32Weight(rw, *store_, node.name + ".pair", {2, 1}, pair));
    const ValueId w_scale =
        KITE_TRY(AddF32Weight(rw, *store_, node.name + ".scale", {1, 2}, scale));
    const ValueId b_scale =
        KITE_TRY(AddF32Weight(rw, *store_, node.name + ".scale.bias", {1}, bias));
    GraphBuilder& b = rw.builder();
    const ValueId r = KITE_TRY(b.Reshape(node.name + ".column", x, column));
    const ValueId logits = KITE_TRY(b.MatMul(node.name + ".pair", r, w_pair));  // [..., N, 2]
    const ValueId sigmoid = KITE_TRY(b.Softmax(node.name + ".sigmoid", logits));
    const ValueId y = KITE_TRY(b.MatMul(node.name + ".scale", sigmoid, w_scale, b_scale));
    ++changes;
    return b.Reshape(node.name, y, std::move(shape));
  }));
  return PassOutcome{.graph = std::move(out),
                     .changes = changes,
                     .summary = std::to_string(changes) + " softcap nodes decomposed"};
}

}  // namespace kite
