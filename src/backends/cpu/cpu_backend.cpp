#include "backends/cpu/cpu_backend.h"

#include <algorithm>
#include <type_traits>

#include "backends/cpu/amx.h"
#include "backends/cpu/kernels.h"
#include "backends/node_by_node.h"
#include "backends/registry.h"
#include "backends/shared_kernels.h"

namespace kite {

CpuBackend::CpuBackend(int32_t threads) : pool_(threads) {}

namespace {

const bool kRegistered = RegisterBackend(
    {.name = "cpu", .make = [](const BackendOptions& options) -> Result<std::unique_ptr<Backend>> {
       if (!options.amx) cpu::amx_bf16_allowed = false;
       return std::make_unique<CpuBackend>(options.threads);
     }});

}  // namespace

SupportResult CpuBackend::Supports(const Graph& graph, const Node& node) const {
  // Encoded matmul weights are repacked (PackedMatrix::PackEncoded); other encoded values not.
  if (SupportResult encoded = DeclineEncoded(graph, node, name(), /*matmul_weights=*/true);
      !encoded.ok) {
    return encoded;
  }
  return std::visit([&](const auto& attrs) { return cpu::Support(attrs, graph, node); },
                    node.attrs);
}

uint64_t CpuBackend::ScratchBytes(const Graph& graph, const Node& node) const {
  return std::visit([&](const auto& attrs) { return cpu::Scratch(attrs, graph, node); },
                    node.attrs);
}

Result<std::shared_ptr<const cpu::PackedMatrix>> CpuBackend::PackedWeight(
    const Graph& graph, const Node& node, std::span<const TensorArg> values) const {
  const Value& weight = graph.value(node.inputs[1]);
  const TensorArg& w = values[node.inputs[1].index];
  const PackKey key{.weight_id = graph.memory_of(weight).weight_id,
                    .offset = KITE_TRY(BytesFor(weight.dtype, weight.alias_offset)),
                    .dtype = w.dtype,
                    .n = w.shape[0],
                    .k = w.shape[1]};
  std::lock_guard lock(packed_mutex_);
  if (auto shared = packed_[key].lock()) return shared;
  // The kernels read only the packed copy; a weight mapped from the model file need not stay in
  // memory too (it is read back from the file if another op, or a later Compile, touches it).
  auto packed = weight.encoding
                    ? cpu::PackedMatrix::PackEncoded(w.dtype, *weight.encoding, w.data, key.n,
                                                     key.k, &pool_, /*release_source=*/true)
                    : cpu::PackedMatrix::Pack(w.dtype, w.data, key.n, key.k, &pool_,
                                              /*release_source=*/true);
  if (!packed) {
    return std::unexpected(std::move(packed.error()).WithContext("weight '" + weight.name + "'"));
  }
  auto shared = std::make_shared<const cpu::PackedMatrix>(std::move(*packed));
  packed_[key] = shared;
  std::erase_if(packed_, [](const auto& entry) { return entry.second.expired(); });
  return shared;
}

Result<std::unique_ptr<CompiledPartition>> CpuBackend::Compile(
    const Graph& graph, const Partition& partition, std::span<const TensorArg> values) const {
  // Per node of the partition: its packed weight (matmul) or null.
  std::vector<std::shared_ptr<const cpu::PackedMatrix>> packed(partition.end - partition.begin);
  uint64_t scratch = 0;
  const std::span<const Node> nodes = graph.nodes();
  for (int32_t i = partition.begin; i < partition.end; ++i) {
    if (nodes[i].is_view()) continue;
    scratch = std::max(scratch, ScratchBytes(graph, nodes[i]));
    if (nodes[i].op() != OpKind::kMatMul) continue;
    auto weight = PackedWeight(graph, nodes[i], values);
    if (!weight) {
      return std::unexpected(
          std::move(weight.error()).WithContext("node '" + nodes[i].name + "' on cpu"));
    }
    packed[i - partition.begin] = std::move(*weight);
  }
  const Node* first = nodes.data() + partition.begin;
  auto run_node = [this, first, packed = std::move(packed)](
                      const Node& node, std::span<const TensorArg> inputs,
                      const TensorArg& output, const ExecContext& context) -> Status {
    const cpu::KernelArgs args{inputs, output, context, pool_, packed[&node - first].get()};
    return std::visit(
        [&](const auto& attrs) -> Status {
          using Attrs = std::decay_t<decltype(attrs)>;
          if constexpr (requires { cpu::Run(attrs, args); }) {
            return cpu::Run(attrs, args);
          } else {
            return Internal("the cpu backend has no " + std::string(Attrs::kName) + " kernel");
          }
        },
        node.attrs);
  };
  return std::make_unique<NodeByNode>(graph, partition, "cpu", scratch, std::move(run_node));
}

uint64_t CpuBackend::packed_bytes() const {
  std::lock_guard lock(packed_mutex_);
  uint64_t bytes = 0;
  for (const auto& [key, weak] : packed_) {
    if (const auto matrix = weak.lock()) bytes += matrix->bytes();
  }
  return bytes;
}

namespace cpu {

SupportResult ContiguousF32(const Graph& graph, const Node& node) {
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    const Value& v = graph.value(node.inputs[i]);
    if (v.dtype != DType::kF32) {
      return SupportResult::No("input " + std::to_string(i) + " '" + v.name + "' is " +
                               std::string(DTypeName(v.dtype)) + ", the cpu kernel reads f32");
    }
    if (!v.contiguous()) {
      return SupportResult::No("input " + std::to_string(i) + " '" + v.name +
                               "' is a strided view; the cpu kernel reads contiguous rows");
    }
  }
  return SupportResult::Yes();
}

}  // namespace cpu

}  // namespace kite
