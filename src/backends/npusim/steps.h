// Per op, in the op's file: whether npusim runs a node (and why not), the scratch its step
// takes, and the step a compiled partition runs (the plan of kernels.h bound to the node's
// encodings and weights). Ops without an overload have no npusim kernel.
#pragma once

#include <string>

#include "backends/npusim/node_io.h"

namespace kite::npusim {

template <typename Attrs>
SupportResult Support(const Attrs&, const Graph&, const Node& node) {
  return SupportResult::No(std::string(node.op_name()) +
                           ": no integer kernel in npusim numerics v1.1 (docs/npusim.md §1)");
}
SupportResult Support(const EmbeddingAttrs&, const Graph&, const Node&);
SupportResult Support(const MatMulAttrs&, const Graph&, const Node&);
SupportResult Support(const AddAttrs&, const Graph&, const Node&);
SupportResult Support(const MulAttrs&, const Graph&, const Node&);
SupportResult Support(const RmsNormAttrs&, const Graph&, const Node&);
SupportResult Support(const RopeAttrs&, const Graph&, const Node&);
SupportResult Support(const AttentionAttrs&, const Graph&, const Node&);
SupportResult Support(const SiluAttrs&, const Graph&, const Node&);
SupportResult Support(const GeluAttrs&, const Graph&, const Node&);
SupportResult Support(const SwiGluAttrs&, const Graph&, const Node&);
SupportResult Support(const GeGluAttrs&, const Graph&, const Node&);
SupportResult Support(const QuantizeAttrs&, const Graph&, const Node&);
SupportResult Support(const DequantizeAttrs&, const Graph&, const Node&);

// Scratch: the int32 codes of every activation input and of the output, plus what an op adds.
uint64_t ActivationScratch(const Graph& graph, const Node& node);
template <typename Attrs>
uint64_t Scratch(const Attrs&, const Graph& graph, const Node& node) {
  return ActivationScratch(graph, node);
}
uint64_t Scratch(const MatMulAttrs&, const Graph& graph, const Node& node);

Result<Step> Prepare(const EmbeddingAttrs&, const NodeContext&);
Result<Step> Prepare(const MatMulAttrs&, const NodeContext&);
Result<Step> Prepare(const AddAttrs&, const NodeContext&);
Result<Step> Prepare(const MulAttrs&, const NodeContext&);
Result<Step> Prepare(const RmsNormAttrs&, const NodeContext&);
Result<Step> Prepare(const RopeAttrs&, const NodeContext&);
Result<Step> Prepare(const AttentionAttrs&, const NodeContext&);
Result<Step> Prepare(const SiluAttrs&, const NodeContext&);
Result<Step> Prepare(const GeluAttrs&, const NodeContext&);
Result<Step> Prepare(const SwiGluAttrs&, const NodeContext&);
Result<Step> Prepare(const GeGluAttrs&, const NodeContext&);
Result<Step> Prepare(const QuantizeAttrs&, const NodeContext&);
Result<Step> Prepare(const DequantizeAttrs&, const NodeContext&);

// ---------------------------------------------------------------- the FP16 path (§11)
// fp16_steps.cpp: a node whose output is not quantized and whose activation inputs hold no
// codes (a float node); on it the backend asks SupportFp16 and PrepareFp16 instead.
bool Fp16Node(const Graph& graph, const Node& node);
Result<Step> PrepareFp16(const EmbeddingAttrs&, const NodeContext&);
Result<Step> PrepareFp16(const MatMulAttrs&, const NodeContext&);
Result<Step> PrepareFp16(const AddAttrs&, const NodeContext&);
Result<Step> PrepareFp16(const MulAttrs&, const NodeContext&);
Result<Step> PrepareFp16(const RmsNormAttrs&, const NodeContext&);
Result<Step> PrepareFp16(const RopeAttrs&, const NodeContext&);
Result<Step> PrepareFp16(const AttentionAttrs&, const NodeContext&);  // fp16_attention.cpp
Result<Step> PrepareFp16(const SiluAttrs&, const NodeContext&);
Result<Step> PrepareFp16(const GeluAttrs&, const NodeContext&);
Result<Step> PrepareFp16(const SwiGluAttrs&, const NodeContext&);
Result<Step> PrepareFp16(const GeGluAttrs&, const NodeContext&);
template <typename Attrs>
SupportResult SupportFp16(const Attrs&, const Graph&, const Node& node) {
  if constexpr (requires(const Attrs& a, const NodeContext& c) { PrepareFp16(a, c); }) {
    return SupportResult::Yes();
  } else {
    return SupportResult::No(std::string(node.op_name()) +
                             ": no fp16 kernel in npusim (docs/npusim.md §11)");
  }
}
SupportResult SupportFp16(const MatMulAttrs&, const Graph&, const Node&);
SupportResult SupportFp16(const AttentionAttrs&, const Graph&, const Node&);
SupportResult SupportFp16(const EmbeddingAttrs&, const Graph&, const Node&);
// The matmul weight's checks both paths share (matmul.cpp): symmetric 4/8-bit codes, per
// output channel or LPBQ, a readable bias.
SupportResult NpuMatMulWeight(const Graph& graph, const Node& node);

// `in` (any strides) rounded to f16, row-major into `out`: the convert on an fp16 node's entry.
void ReadF16(const TensorArg& in, std::span<float> out);

}  // namespace kite::npusim
