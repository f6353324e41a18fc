// CompiledGraph: a graph bound to backends and memory. Compile places the nodes (partitioner),
// plans the activation arena (graph/memory_plan.h), allocates it and the scratch once, and
// resolves every node's inputs and output to TensorArgs; Run then allocates nothing.
//
//   CompiledGraph compiled = KITE_TRY(CompiledGraph::Compile(std::move(graph), backends));
//   KITE_RETURN_IF_ERROR(compiled.SetInput("tokens", ids));
//   KITE_RETURN_IF_ERROR(compiled.SetInput("positions", positions));
//   KITE_RETURN_IF_ERROR(compiled.Run(&kv_view));
//   std::span<const float> logits = KITE_TRY(compiled.OutputF32(0));  // [T, vocab]
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "backends/backend.h"
#include "backends/op_profile.h"
#include "backends/partitioner.h"
#include "base/status.h"
#include "tensor/aligned_buffer.h"
#include "graph/graph.h"
#include "graph/kv_cache.h"
#include "graph/memory_plan.h"

namespace kite {

class CompiledGraph {
 public:
  // `backends` in order of preference; they must outlive the compiled graph.
  static Result<CompiledGraph> Compile(Graph graph, std::span<Backend* const> backends);

  CompiledGraph(CompiledGraph&&) = default;
  CompiledGraph& operator=(CompiledGraph&&) = default;
  CompiledGraph(const CompiledGraph&) = delete;
  CompiledGraph& operator=(const CompiledGraph&) = delete;

  const Graph& graph() const { return graph_; }
  const Placement& placement() const { return placement_; }
  const MemoryPlan& memory_plan() const { return plan_; }
  uint64_t scratch_bytes() const { return scratch_.size(); }

  // Copies a graph input's elements into the arena; the count and dtype must match. An input
  // keeps its value across runs until set again.
  Status SetInput(std::string_view name, std::span<const int32_t> values);
  Status SetInput(std::string_view name, std::span<const float> values);

  // Runs the partitions in order. `kv_cache` is needed when the graph has attention nodes.
  Status Run(const KvCacheView* kv_cache = nullptr);

  // Times every node of later runs into `profile` (nullptr: stop timing). The profile must
  // outlive the runs.
  void set_profile(OpProfile* profile);

  // The memory of any value as the kernels see it; node outputs hold the last run's results
  // (values that are not graph outputs may have been overwritten by later nodes).
  const TensorArg& arg(ValueId value) const { return args_[value.index]; }
  // Graph output `index` (in MarkOutput order) as contiguous f32, e.g. logits [T, vocab].
  Result<std::span<const float>> OutputF32(size_t index) const;

 private:
  CompiledGraph() = default;
  Status SetInputBytes(std::string_view name, DType dtype, const void* data, int64_t count);

  Graph graph_;
  std::vector<Backend*> backends_;
  Placement placement_;
  MemoryPlan plan_;
  AlignedBuffer arena_;
  AlignedBuffer scratch_;
  std::vector<TensorArg> args_;                    // per value
  std::vector<std::vector<TensorArg>> node_args_;  // per node: its inputs' args, in order
  OpProfile* profile_ = nullptr;
  std::vector<int32_t> profile_rows_;  // per node: its row in profile_
};

}  // namespace kite
