#include "backends/cpu/kernels.h"
#include "backends/shared_kernels.h"

namespace kite::cpu {

SupportResult Support(const EmbeddingAttrs&, const Graph& graph, const Node& node) {
  const Value& table = graph.value(node.inputs[0]);
  if (!Traits(table.dtype).can_dequantize) {
    return SupportResult::No("cannot read " + std::string(DTypeName(table.dtype)) + " table '" +
                             table.name + "'");
  }
  if (!table.contiguous()) return SupportResult::No("table '" + table.name + "' is strided");
  return SupportResult::Yes();
}

// table [vocab, dim] (any dequantizable dtype), ids [T] -> out [T, dim] f32, times attrs.scale:
// each row is dequantized as it is looked up (a few rows per step; the table stays as stored).
Status Run(const EmbeddingAttrs& attrs, const KernelArgs& args) {
  return LookUpEmbedding(args.in[0], args.in[1], args.out, attrs.scale);
}

}  // namespace kite::cpu
