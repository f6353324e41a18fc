// Executable: a graph bound to backends, compiled once and then immutable. Compile places the
// nodes (partitioner), plans the activation arena (graph/memory_plan.h) and has each backend
// compile the partitions placed on it (Backend::Compile). A RunState holds what one run writes
// (the arena, the kernel scratch, every value's TensorArg, the inputs and outputs). Run is
// const: several threads may run one executable at once, each with its own RunState, and a run
// allocates nothing.
//
//   std::unique_ptr<Executable> executable =
//       KITE_TRY(Executable::Compile(std::move(graph), backends));
//   std::unique_ptr<RunState> state = KITE_TRY(executable->NewRunState());
//   KITE_RETURN_IF_ERROR(state->SetInput("tokens", ids));
//   KITE_RETURN_IF_ERROR(state->SetInput("positions", positions));
//   KITE_RETURN_IF_ERROR(executable->Run(*state, {.kv_cache = &kv_view}));
//   std::span<const float> logits = KITE_TRY(state->OutputF32(0));  // [T, vocab]
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "backends/backend.h"
#include "base/status.h"
#include "graph/graph.h"
#include "graph/kv_cache.h"
#include "graph/memory_plan.h"
#include "runtime/observer.h"
#include "runtime/partitioner.h"
#include "tensor/aligned_buffer.h"

namespace kite {

// What one run reads besides its inputs.
struct RunContext {
  const KvCacheView* kv_cache = nullptr;  // for attention; null when the graph has none
  Observer* observer = nullptr;           // shown every node's output; null: nobody watches
};

class Executable;

// One run's memory for one executable (Executable::NewRunState). Not shared between threads.
class RunState {
 public:
  RunState(const RunState&) = delete;
  RunState& operator=(const RunState&) = delete;

  // Copies a graph input's elements into the arena; the count and dtype must match. An input
  // keeps its value across runs until set again.
  Status SetInput(std::string_view name, std::span<const int32_t> values);
  Status SetInput(std::string_view name, std::span<const float> values);

  // The memory of any value as the kernels see it; node outputs hold the last run's results
  // (values that are not graph outputs may have been overwritten by later nodes: an Observer
  // sees each one before that).
  const TensorArg& arg(ValueId value) const { return args_[value.index]; }
  // Graph output `index` (in MarkOutput order) as contiguous f32, e.g. logits [T, vocab].
  Result<std::span<const float>> OutputF32(size_t index) const;

 private:
  friend class Executable;
  explicit RunState(const Executable& executable) : executable_(executable) {}
  Status SetInputBytes(std::string_view name, DType dtype, const void* data, int64_t count);

  const Executable& executable_;
  AlignedBuffer arena_;
  AlignedBuffer scratch_;
  std::vector<TensorArg> args_;                    // per value
  std::vector<std::vector<TensorArg>> node_args_;  // per node: its inputs' args, in order
};

class Executable {
 public:
  // `backends` in order of preference; they must outlive the executable.
  static Result<std::unique_ptr<Executable>> Compile(Graph graph,
                                                     std::span<Backend* const> backends);

  Executable(const Executable&) = delete;
  Executable& operator=(const Executable&) = delete;

  const Graph& graph() const { return graph_; }
  const Placement& placement() const { return placement_; }
  const MemoryPlan& memory_plan() const { return plan_; }
  uint64_t scratch_bytes() const { return scratch_bytes_; }
  // Unique in the process and never reused, unlike the address: observers key what they learn
  // about an executable's nodes by it.
  uint64_t id() const { return id_; }

  // A fresh arena and scratch for runs of this executable; it must not outlive it.
  Result<std::unique_ptr<RunState>> NewRunState() const;

  // Runs the partitions in order on `state` (made by this executable's NewRunState).
  Status Run(RunState& state, const RunContext& context = {}) const;

 private:
  Executable() = default;

  Graph graph_;
  Placement placement_;
  std::vector<std::unique_ptr<CompiledPartition>> partitions_;  // per placement_.partitions
  MemoryPlan plan_;
  uint64_t scratch_bytes_ = 0;
  uint64_t id_ = 0;
  // Per value: its TensorArg with the data of weights filled in; values in the arena have null
  // data here (each RunState has its own arena).
  std::vector<TensorArg> args_;
};

}  // namespace kite
