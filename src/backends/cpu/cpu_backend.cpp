#include "backends/cpu/cpu_backend.h"

#include <algorithm>
#include <type_traits>

#include "backends/cpu/kernels.h"
#include "backends/registry.h"
#include "base/hash.h"

namespace kite {

CpuBackend::CpuBackend(int32_t threads) : pool_(threads) {}

namespace {

const bool kRegistered = RegisterBackend(
    {.name = "cpu", .make = [](const BackendOptions& options) -> Result<std::unique_ptr<Backend>> {
       return std::make_unique<CpuBackend>(options.threads);
     }});

}  // namespace

SupportResult CpuBackend::Supports(const Graph& graph, const Node& node) const {
  return std::visit([&](const auto& attrs) { return cpu::Support(attrs, graph, node); },
                    node.attrs);
}

uint64_t CpuBackend::ScratchBytes(const Graph& graph, const Node& node) const {
  return std::visit([&](const auto& attrs) { return cpu::Scratch(attrs, graph, node); },
                    node.attrs);
}

namespace {

// FNV-1a over the first and last 256 bytes: cheap, and different for any two weights that
// happen to share an address.
uint64_t Fingerprint(const std::byte* data, uint64_t bytes) {
  const uint64_t edge = std::min<uint64_t>(bytes, 256);
  return Fnv1a(data + bytes - edge, edge, Fnv1a(data, edge));
}

}  // namespace

Status CpuBackend::Prepare(const Graph& graph, const Node& node,
                           std::span<const TensorArg> inputs) {
  if (node.op() != OpKind::kMatMul) return Ok();
  const TensorArg& w = inputs[1];
  const int64_t n = w.shape[0], k = w.shape[1];
  const uint64_t fingerprint = Fingerprint(w.data, KITE_TRY(BytesFor(w.dtype, n * k)));
  if (const auto it = packed_.find(w.data); it != packed_.end()) {
    const PackedEntry& e = it->second;
    if (e.dtype == w.dtype && e.n == n && e.k == k && e.fingerprint == fingerprint) return Ok();
  }
  // The kernels read only the packed copy; a weight mapped from the model file need not stay in
  // memory too (it is read back from the file if another op, or a later Prepare, touches it).
  auto packed = cpu::PackedMatrix::Pack(w.dtype, w.data, n, k, &pool_, /*release_source=*/true);
  if (!packed) {
    return std::unexpected(
        std::move(packed.error()).WithContext("weight '" + graph.value(node.inputs[1]).name + "'"));
  }
  packed_[w.data] = PackedEntry{w.dtype, n, k, fingerprint,
                                std::make_unique<cpu::PackedMatrix>(std::move(*packed))};
  return Ok();
}

Status CpuBackend::Execute(const Node& node, std::span<const TensorArg> inputs,
                           const TensorArg& output, const ExecContext& context) {
  const cpu::PackedMatrix* packed = nullptr;
  if (node.op() == OpKind::kMatMul) {
    const auto it = packed_.find(inputs[1].data);
    if (it == packed_.end()) return Internal("matmul weight was not prepared (Prepare not called)");
    packed = it->second.matrix.get();
  }
  const cpu::KernelArgs args{inputs, output, context, pool_, packed};
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
}

uint64_t CpuBackend::packed_bytes() const {
  uint64_t bytes = 0;
  for (const auto& [data, entry] : packed_) bytes += entry.matrix->bytes();
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
