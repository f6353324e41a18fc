// NodeByNode: the compiled partition that runs its nodes one at a time through a function, the
// default of Backend::Compile (through Backend::Execute); a backend that binds prepared data to
// its nodes (the cpu's packed weights) passes a function that holds it.
#pragma once

#include <functional>
#include <string>

#include "backends/backend.h"

namespace kite {

class NodeByNode final : public CompiledPartition {
 public:
  using RunNode = std::function<Status(const Node& node, std::span<const TensorArg> inputs,
                                       const TensorArg& output, const ExecContext& context)>;

  // `graph` must outlive the partition; `run_node` must be safe to call from several threads.
  NodeByNode(const Graph& graph, const Partition& partition, std::string backend,
             uint64_t scratch_bytes, RunNode run_node);

  uint64_t scratch_bytes() const override { return scratch_bytes_; }
  Status Run(const RunArgs& args, const ExecContext& context,
             NodeListener* listener) const override;

 private:
  const Graph& graph_;
  Partition partition_;
  std::string backend_;
  uint64_t scratch_bytes_;
  RunNode run_node_;
};

}  // namespace kite
