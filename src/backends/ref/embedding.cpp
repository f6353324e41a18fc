#include "backends/ref/kernels.h"
#include "backends/shared_kernels.h"

namespace kite::ref {

SupportResult Support(const EmbeddingAttrs&, const Graph& graph, const Node& node) {
  return ReadableWeight(graph.value(node.inputs[0]), "table");
}

// table [vocab, dim] (any dequantizable dtype), ids [T] i32 -> out [T, dim] f32, times attrs.scale.
Status Run(const EmbeddingAttrs& attrs, const KernelArgs& args) {
  return LookUpEmbedding(args.in[0], args.in[1], args.out, attrs.scale);
}

}  // namespace kite::ref
