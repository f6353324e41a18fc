// The cpu backend's kernels, one overload per op, each in its own file (backends/cpu/<op>.cpp).
// An op without an overload here is declined (Supports says why) and runs on the next backend.
#pragma once

#include <span>
#include <string>

#include "backends/backend.h"
#include "backends/cpu/packed_matrix.h"
#include "base/thread_pool.h"

namespace kite::cpu {

struct KernelArgs {
  std::span<const TensorArg> in;  // in node.inputs order
  const TensorArg& out;           // contiguous
  const ExecContext& context;
  ThreadPool& pool;
  const PackedMatrix* packed = nullptr;  // matmul: its weight, packed when its partition was compiled
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

SupportResult Support(const EmbeddingAttrs& attrs, const Graph& graph, const Node& node);
SupportResult Support(const MatMulAttrs& attrs, const Graph& graph, const Node& node);
SupportResult Support(const AddAttrs& attrs, const Graph& graph, const Node& node);
SupportResult Support(const MulAttrs& attrs, const Graph& graph, const Node& node);
SupportResult Support(const RmsNormAttrs& attrs, const Graph& graph, const Node& node);
SupportResult Support(const RopeAttrs& attrs, const Graph& graph, const Node& node);
SupportResult Support(const AttentionAttrs& attrs, const Graph& graph, const Node& node);
SupportResult Support(const SiluAttrs& attrs, const Graph& graph, const Node& node);
SupportResult Support(const GeluAttrs& attrs, const Graph& graph, const Node& node);
SupportResult Support(const SwiGluAttrs& attrs, const Graph& graph, const Node& node);
SupportResult Support(const GeGluAttrs& attrs, const Graph& graph, const Node& node);
SupportResult Support(const SoftcapAttrs& attrs, const Graph& graph, const Node& node);
SupportResult Support(const SoftmaxAttrs& attrs, const Graph& graph, const Node& node);
SupportResult Support(const QuantizeAttrs& attrs, const Graph& graph, const Node& node);
SupportResult Support(const DequantizeAttrs& attrs, const Graph& graph, const Node& node);
template <typename Attrs>
SupportResult Support(const Attrs&, const Graph&, const Node&) {
  return SupportResult::No("the cpu backend has no " + std::string(Attrs::kName) + " kernel");
}

uint64_t Scratch(const MatMulAttrs& attrs, const Graph& graph, const Node& node);
uint64_t Scratch(const RmsNormAttrs& attrs, const Graph& graph, const Node& node);
template <typename Attrs>
uint64_t Scratch(const Attrs&, const Graph&, const Node&) {
  return 0;
}

// Whether every input and the output of `node` are contiguous f32 (what the element-wise
// kernels read); else a reason.
SupportResult ContiguousF32(const Graph& graph, const Node& node);

}  // namespace kite::cpu
