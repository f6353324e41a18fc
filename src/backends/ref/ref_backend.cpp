#include "backends/ref/ref_backend.h"

#include <type_traits>

#include "backends/ref/kernels.h"
#include "backends/registry.h"
#include "backends/shared_kernels.h"

namespace kite {

namespace {

const bool kRegistered = RegisterBackend(
    {.name = "ref",
     .runs_every_op = true,
     .make = [](const BackendOptions&) -> Result<std::unique_ptr<Backend>> {
       return std::make_unique<RefBackend>();
     }});

}  // namespace

SupportResult ref::ReadableWeight(const Value& value, std::string_view role) {
  if (Traits(value.dtype).can_dequantize) return SupportResult::Yes();
  return SupportResult::No("cannot dequantize " + std::string(DTypeName(value.dtype)) + " " +
                           std::string(role) + " '" + value.name + "'");
}

SupportResult RefBackend::Supports(const Graph& graph, const Node& node) const {
  if (SupportResult encoded = DeclineEncoded(graph, node, name(), /*matmul_weights=*/true);
      !encoded.ok) {
    return encoded;
  }
  return std::visit([&](const auto& attrs) { return ref::Support(attrs, graph, node); },
                    node.attrs);
}

uint64_t RefBackend::ScratchBytes(const Graph& graph, const Node& node) const {
  return std::visit([&](const auto& attrs) { return ref::Scratch(attrs, graph, node); },
                    node.attrs);
}

Status RefBackend::Execute(const Node& node, std::span<const TensorArg> inputs,
                           const TensorArg& output, const ExecContext& context) const {
  const ref::KernelArgs args{inputs, output, context};
  return std::visit(
      [&](const auto& attrs) -> Status {
        using Attrs = std::decay_t<decltype(attrs)>;
        if constexpr (Attrs::kIsView) {
          return Internal("view nodes have no kernel; the executor skips them");
        } else {
          return ref::Run(attrs, args);
        }
      },
      node.attrs);
}

}  // namespace kite
