// embedding, docs/npusim.md §10: the table row as tensor/ dequantizes it, times the op's scale;
// the quantize node after it puts it on the output encoding's grid (§2.5).
#include "backends/npusim/steps.h"
#include "backends/shared_kernels.h"
#include "tensor/dequantize.h"

namespace kite::npusim {

SupportResult Support(const EmbeddingAttrs&, const Graph& graph, const Node& node) {
  const Value& table = graph.value(node.inputs[0]);
  if (table.encoding || !Traits(table.dtype).can_dequantize) {
    return SupportResult::No("embedding: cannot read the table '" + table.name + "' (" +
                             std::string(DTypeName(table.dtype)) + ")");
  }
  return EncodedActivations(graph, node, {});  // the output: quantized after it
}

Result<Step> Prepare(const EmbeddingAttrs& attrs, const NodeContext&) {
  const float scale = attrs.scale;
  return Step([scale](std::span<const TensorArg> in, const TensorArg& out,
                      const ExecContext&) -> Status {
    return LookUpEmbedding(in[0], in[1], out, scale);
  });
}

}  // namespace kite::npusim
