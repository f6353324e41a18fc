// The Backend contract. A backend declares, node by node, whether it can run a node (and why
// not); the partitioner decides where each node runs; the executor calls Execute with memory
// it planned. A new backend (cpu SIMD, npusim) implements this interface and touches no graph
// or model code.
#pragma once

#include <cstddef>
#include <cstdint>
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
  std::span<std::byte> scratch;           // at least ScratchBytes(node) bytes, 64-byte aligned
};

class Backend {
 public:
  virtual ~Backend() = default;

  virtual std::string_view name() const = 0;

  // Whether this backend runs `node` (its inputs are graph.value(node.inputs[i])); when not, a
  // reason a user can act on. Views are never asked: they have no kernel.
  virtual SupportResult Supports(const Graph& graph, const Node& node) const = 0;

  // Scratch memory Execute needs for `node`; each run state allocates the largest once.
  virtual uint64_t ScratchBytes(const Graph& graph, const Node& node) const { return 0; }

  // Called once for each node placed on this backend when a graph is compiled, with the node's
  // inputs as Execute will see them, except that activations have null data (each run has its
  // own arena): the place to prepare constant weights (repack them for the
  // kernels), so that Execute does not. A weight shared by several graphs (decode step, prefill
  // chunks) is offered once per graph; a backend that keeps prepared copies keys them by memory.
  virtual Status Prepare(const Graph& graph, const Node& node, std::span<const TensorArg> inputs) {
    return Ok();
  }

  // Runs one node it declared support for. `inputs` follow node.inputs; `output` is contiguous
  // and overlaps no input. Shapes and dtypes were checked when the graph was built, so kernels
  // check only what depends on run-time data (token ids, positions, the KV cache).
  virtual Status Execute(const Node& node, std::span<const TensorArg> inputs,
                         const TensorArg& output, const ExecContext& context) = 0;
};

}  // namespace kite
