// ref's kernels, one overload per op, each in its own file (backends/ref/<op>.cpp).
#pragma once

#include <span>

#include "backends/backend.h"

namespace kite::ref {

struct KernelArgs {
  std::span<const TensorArg> in;  // in node.inputs order
  const TensorArg& out;           // contiguous
  const ExecContext& context;
};

Status Run(const EmbeddingAttrs& attrs, const KernelArgs& args);
Status Run(const MatMulAttrs& attrs, const KernelArgs& args);
Status Run(const AddAttrs& attrs, const KernelArgs& args);
Status Run(const MulAttrs& attrs, const KernelArgs& args);
Status Run(const RmsNormAttrs& attrs, const KernelArgs& args);
Status Run(const RopeAttrs& attrs, const KernelArgs& args);
Status Run(const AttentionAttrs& attrs, const KernelArgs& args);
Status Run(const SiluAttrs& attrs, const KernelArgs& args);
Status Run(const GeluAttrs& attrs, const KernelArgs& args);
Status Run(const SwiGluAttrs& attrs, const KernelArgs& args);
Status Run(const GeGluAttrs& attrs, const KernelArgs& args);
Status Run(const SoftcapAttrs& attrs, const KernelArgs& args);
Status Run(const SoftmaxAttrs& attrs, const KernelArgs& args);
Status Run(const QuantizeAttrs& attrs, const KernelArgs& args);
Status Run(const DequantizeAttrs& attrs, const KernelArgs& args);

// Whether ref runs the node: yes unless the op's file says otherwise. What ref may lack is a
// way to read a weight's dtype; shapes and activation dtypes were checked by the builder.
SupportResult Support(const EmbeddingAttrs& attrs, const Graph& graph, const Node& node);
SupportResult Support(const MatMulAttrs& attrs, const Graph& graph, const Node& node);
template <typename Attrs>
SupportResult Support(const Attrs&, const Graph&, const Node&) {
  return SupportResult::Yes();
}
// Yes when tensor/dequantize.h reads the value's dtype; else a reason naming it.
SupportResult ReadableWeight(const Value& value, std::string_view role);

// Scratch bytes per op (zero unless the op's file says otherwise).
uint64_t Scratch(const MatMulAttrs& attrs, const Graph& graph, const Node& node);
uint64_t Scratch(const RmsNormAttrs& attrs, const Graph& graph, const Node& node);
uint64_t Scratch(const AttentionAttrs& attrs, const Graph& graph, const Node& node);
template <typename Attrs>
uint64_t Scratch(const Attrs&, const Graph&, const Node&) {
  return 0;
}

}  // namespace kite::ref
