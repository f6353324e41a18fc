#include "backends/npusim/npusim_backend.h"

#include <algorithm>
#include <type_traits>

#include "backends/node_by_node.h"
#include "backends/npusim/steps.h"
#include "backends/registry.h"

namespace kite {

namespace {

const bool kRegistered = RegisterBackend(
    {.name = "npusim",
     .make = [](const BackendOptions& options) -> Result<std::unique_ptr<Backend>> {
       const std::string chip =
           options.chip.empty() ? std::string(kNpusimDefaultChip) : options.chip;
       ChipFile file = KITE_TRY(ReadChipFile(DefaultChipsDir(), chip));
       // A float value npusim runs is fp16 (docs/npusim.md §11), so the rules' fp16 gate refuses
       // float nodes on a chip without FP16.
       return std::make_unique<NpusimBackend>(
           options.threads, NpuTarget{.chip = std::move(file.features),
                                      .activations = ActivationKind::kFp16,
                                      .context = options.context,
                                      .kv_bytes = KITE_TRY(NpuKvBytes(options.kv_dtype))});
     }});

}  // namespace

NpusimBackend::NpusimBackend(int32_t threads, NpuTarget target)
    : pool_(threads), target_(std::move(target)) {}

// First whether npusim has a kernel for the node (integer codes, or the FP16 path for a float
// node), then whether the chip's NPU runs it (the rules `kite inspect --placement --chip` and the
// cost model share; they refuse fp16 on a chip without FP16).
SupportResult NpusimBackend::Supports(const Graph& graph, const Node& node) const {
  const bool fp16 = npusim::Fp16Node(graph, node);
  const SupportResult kernel = std::visit(
      [&](const auto& attrs) {
        return fp16 ? npusim::SupportFp16(attrs, graph, node)
                    : npusim::Support(attrs, graph, node);
      },
      node.attrs);
  if (!kernel.ok) return kernel;
  const NpuVerdict verdict = NpuRule(graph, node, target_);
  // The rule refuses fp16 RoPE in its vendor form (sin/cos of fp16 angles) and sends it to
  // decompose_rope; npusim's fp16 rope computes that decomposition's numbers (fp16_kernels.h).
  if (fp16 && verdict.decomposition == Decomposition::kRopeTables) return SupportResult::Yes();
  return verdict.support;
}

uint64_t NpusimBackend::ScratchBytes(const Graph& graph, const Node& node) const {
  return std::visit([&](const auto& attrs) { return npusim::Scratch(attrs, graph, node); },
                    node.attrs);
}

Result<std::unique_ptr<CompiledPartition>> NpusimBackend::Compile(
    const Graph& graph, const Partition& partition, std::span<const TensorArg> values) const {
  // Per node of the partition: its prepared step (views have none).
  std::vector<npusim::Step> steps(partition.end - partition.begin);
  uint64_t scratch = 0;
  const std::span<const Node> nodes = graph.nodes();
  for (int32_t i = partition.begin; i < partition.end; ++i) {
    const Node& node = nodes[i];
    if (node.is_view()) continue;
    scratch = std::max(scratch, ScratchBytes(graph, node));
    const npusim::NodeContext context{.graph = graph, .node = node, .values = values,
                                      .pool = &pool_};
    auto step = std::visit(
        [&](const auto& attrs) -> Result<npusim::Step> {
          using Attrs = std::decay_t<decltype(attrs)>;
          if constexpr (requires { npusim::PrepareFp16(attrs, context); }) {
            if (npusim::Fp16Node(graph, node)) return npusim::PrepareFp16(attrs, context);
          }
          if constexpr (requires { npusim::Prepare(attrs, context); }) {
            return npusim::Prepare(attrs, context);
          } else {
            return Internal("npusim has no " + std::string(Attrs::kName) + " kernel");
          }
        },
        node.attrs);
    if (!step) {
      return std::unexpected(std::move(step.error()).WithContext("node '" + node.name +
                                                                 "' on npusim"));
    }
    steps[i - partition.begin] = std::move(*step);
  }
  const Node* first = nodes.data() + partition.begin;
  auto run_node = [first, steps = std::move(steps)](
                      const Node& node, std::span<const TensorArg> inputs,
                      const TensorArg& output, const ExecContext& context) -> Status {
    return steps[&node - first](inputs, output, context);
  };
  return std::make_unique<NodeByNode>(graph, partition, "npusim", scratch, std::move(run_node));
}

}  // namespace kite
