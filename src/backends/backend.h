// The Backend contract. A backend declares, node by node, whether it can run a node (and why
// not) and, if it can tell, what the node costs; the partitioner decides where each node runs;
// the backend compiles each partition placed on it once, and runs then call the compiled
// partition with memory the executor planned. A new backend (cpu SIMD, npusim) implements this
// interface, registers itself (backends/registry.h) and touches no graph, model or runtime code.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "graph/graph.h"
#include "graph/kv_cache.h"

namespace kite {

struct SupportResult {
  bool ok = true;
  std::string reason;  // why not, when !ok: "no kernel for rope", "q4_K weights unsupported"

  static SupportResult Yes() { return {}; }
  static SupportResult No(std::string reason) { return {false, std::move(reason)}; }
};

// A value as a kernel sees it: its memory, shape and strides, resolved when the graph is
// compiled (views already folded in). Kernels never write their inputs.
struct TensorArg {
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;    // outermost first
  std::vector<int64_t> strides;  // in elements; block-quantized values are contiguous rows
  std::byte* data = nullptr;     // element 0
  // The value's encoding when it holds quantized integer codes (graph/encoding.h), else null;
  // it points into the graph, which outlives the runs.
  const QuantEncoding* encoding = nullptr;

  int64_t elements() const {
    int64_t count = 1;
    for (int64_t dim : shape) count *= dim;
    return count;
  }
  template <typename T>
  T* as() const {
    return reinterpret_cast<T*>(data);
  }
};

struct ExecContext {
  const KvCacheView* kv_cache = nullptr;  // for attention; null when the caller has none
  std::span<std::byte> scratch;           // at least scratch_bytes() bytes, 64-byte aligned
};

// Nodes [begin, end) of a graph, in order, placed on one backend.
struct Partition {
  int32_t backend = -1;
  int32_t begin = 0;
  int32_t end = 0;
};

// One run's memory as the kernels see it.
struct RunArgs {
  std::span<const TensorArg> values;                    // per value
  std::span<const std::vector<TensorArg>> node_inputs;  // per node: its inputs' args, in order
};

// Told about each node a compiled partition runs (the executor's hook for its Observer).
class NodeListener {
 public:
  virtual ~NodeListener() = default;
  virtual void BeforeNode(int32_t node) = 0;
  // `output` is valid only during the call; an error stops the run.
  virtual Status AfterNode(int32_t node, const TensorArg& output) = 0;
};

// What a backend made of one partition (Backend::Compile). Immutable: Run may be called from
// several threads at once, each with its own memory.
class CompiledPartition {
 public:
  virtual ~CompiledPartition() = default;
  // Bytes of ExecContext::scratch that Run needs.
  virtual uint64_t scratch_bytes() const = 0;
  // Runs the partition's nodes in order. `listener` (null: none) hears of each node whose output
  // the partition writes to memory (a backend that fuses nodes tells only of those it keeps).
  // Errors name the node and the backend.
  virtual Status Run(const RunArgs& args, const ExecContext& context,
                     NodeListener* listener) const = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;

  virtual std::string_view name() const = 0;

  // Whether this backend runs `node` (its inputs are graph.value(node.inputs[i])); when not, a
  // reason a user can act on. Views are never asked: they have no kernel.
  virtual SupportResult Supports(const Graph& graph, const Node& node) const = 0;

  // What running `node` here costs, in seconds, when the backend can estimate it. A backend
  // that says wins a node over a more preferred one only when that one says too, and more.
  virtual std::optional<double> Cost(const Graph& graph, const Node& node) const {
    return std::nullopt;
  }

  // Scratch memory Execute needs for `node`.
  virtual uint64_t ScratchBytes(const Graph& graph, const Node& node) const { return 0; }

  // Compiles the partition's nodes (views among them have no kernel), once per graph, with every
  // value's TensorArg as runs will see it, except that activations have null data (each run has
  // its own arena): the place to prepare constant weights (repack them for the kernels) and bind
  // them to what it returns. A weight's bytes never change under its Value::weight_id, so
  // prepared copies may be shared between compiled partitions by it. `graph` outlives the
  // result. Default: node by node through Execute (backends/node_by_node.h).
  virtual Result<std::unique_ptr<CompiledPartition>> Compile(
      const Graph& graph, const Partition& partition, std::span<const TensorArg> values) const;

  // Runs one node it declared support for, from several threads at once if asked. `inputs`
  // follow node.inputs; `output` is contiguous and overlaps no input. Shapes and dtypes were
  // checked when the graph was built, so kernels check only what depends on run-time data
  // (token ids, positions, the KV cache). Only the default Compile calls it.
  virtual Status Execute(const Node& node, std::span<const TensorArg> inputs,
                         const TensorArg& output, const ExecContext& context) const;
};

}  // namespace kite
