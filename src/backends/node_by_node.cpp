#include "backends/node_by_node.h"

#include <algorithm>

namespace kite {

NodeByNode::NodeByNode(const Graph& graph, const Partition& partition, std::string backend,
                       uint64_t scratch_bytes, RunNode run_node)
    : graph_(graph),
      partition_(partition),
      backend_(std::move(backend)),
      scratch_bytes_(scratch_bytes),
      run_node_(std::move(run_node)) {}

Status NodeByNode::Run(const RunArgs& args, const ExecContext& context,
                       NodeListener* listener) const {
  const std::span<const Node> nodes = graph_.nodes();
  for (int32_t i = partition_.begin; i < partition_.end; ++i) {
    const Node& node = nodes[i];
    if (node.is_view()) continue;
    if (listener) listener->BeforeNode(i);
    const TensorArg& output = args.values[node.output.index];
    Status status = run_node_(node, args.node_inputs[i], output, context);
    if (status && listener) status = listener->AfterNode(i, output);
    if (!status) {
      return std::unexpected(std::move(status.error())
                                 .WithContext("node '" + node.name + "' (" +
                                              std::string(node.op_name()) + ") on " + backend_));
    }
  }
  return Ok();
}

Result<std::unique_ptr<CompiledPartition>> Backend::Compile(
    const Graph& graph, const Partition& partition, std::span<const TensorArg> values) const {
  uint64_t scratch = 0;
  const std::span<const Node> nodes = graph.nodes();
  for (int32_t i = partition.begin; i < partition.end; ++i) {
    if (!nodes[i].is_view()) scratch = std::max(scratch, ScratchBytes(graph, nodes[i]));
  }
  return std::make_unique<NodeByNode>(
      graph, partition, std::string(name()), scratch,
      [this](const Node& node, std::span<const TensorArg> inputs, const TensorArg& output,
             const ExecContext& context) { return Execute(node, inputs, output, context); });
}

Status Backend::Execute(const Node& node, std::span<const TensorArg> inputs,
                        const TensorArg& output, const ExecContext& context) const {
  return Internal("the " + std::string(name()) + " backend runs nodes only through its Compile");
}

}  // namespace kite
