#include "backends/executor.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "tensor/tensor.h"

namespace kite {

Result<CompiledGraph> CompiledGraph::Compile(Graph graph, std::span<Backend* const> backends) {
  CompiledGraph compiled;
  compiled.placement_ = KITE_TRY(PartitionGraph(graph, backends));
  compiled.plan_ = KITE_TRY(PlanMemory(graph, AlignedBuffer::kAlignment));
  compiled.backends_.assign(backends.begin(), backends.end());
  auto arena = AlignedBuffer::Allocate(compiled.plan_.arena_bytes);
  if (!arena) return std::unexpected(std::move(arena.error()).WithContext("activation arena"));
  compiled.arena_ = std::move(*arena);

  uint64_t scratch = 0;
  const std::span<const Node> nodes = graph.nodes();
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].is_view()) continue;
    const Backend* backend = compiled.backends_[compiled.placement_.nodes[i].backend];
    scratch = std::max(scratch, backend->ScratchBytes(graph, nodes[i]));
  }
  auto scratch_buffer = AlignedBuffer::Allocate(scratch);
  if (!scratch_buffer) {
    return std::unexpected(std::move(scratch_buffer.error()).WithContext("kernel scratch"));
  }
  compiled.scratch_ = std::move(*scratch_buffer);

  compiled.args_.resize(graph.num_values());
  for (int32_t i = 0; i < graph.num_values(); ++i) {
    const Value& value = graph.value(ValueId{i});
    TensorArg& arg = compiled.args_[i];
    arg.dtype = value.dtype;
    arg.shape = value.shape;
    arg.strides = value.strides;
    if (const auto offset = compiled.plan_.ArenaOffset(graph, ValueId{i})) {
      arg.data = compiled.arena_.data() + *offset;
    } else {  // a weight or a view of one; kernels only read it
      const Value& source = graph.memory_of(value);
      const uint64_t view_bytes = KITE_TRY(BytesFor(value.dtype, value.alias_offset));
      arg.data = const_cast<std::byte*>(static_cast<const std::byte*>(source.data)) + view_bytes;
    }
  }
  compiled.node_args_.resize(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (ValueId input : nodes[i].inputs) {
      compiled.node_args_[i].push_back(compiled.args_[input.index]);
    }
  }
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].is_view()) continue;
    Backend* backend = compiled.backends_[compiled.placement_.nodes[i].backend];
    Status prepared = backend->Prepare(graph, nodes[i], compiled.node_args_[i]);
    if (!prepared) {
      return std::unexpected(std::move(prepared.error())
                                 .WithContext("preparing node '" + nodes[i].name + "' on " +
                                              std::string(backend->name())));
    }
  }
  compiled.graph_ = std::move(graph);
  return compiled;
}

Status CompiledGraph::SetInputBytes(std::string_view name, DType dtype, const void* data,
                                    int64_t count) {
  const std::optional<ValueId> id = graph_.FindInput(name);
  if (!id) return NotFound("graph has no input named '" + std::string(name) + "'");
  const Value& input = graph_.value(*id);
  if (input.dtype != dtype || input.elements() != count) {
    return InvalidInput("input '" + std::string(name) + "' is " + ShapeString(input.shape) + " " +
                        std::string(DTypeName(input.dtype)) + ", given " + std::to_string(count) +
                        " " + std::string(DTypeName(dtype)) + " elements");
  }
  std::memcpy(args_[id->index].data, data, count * Traits(dtype).block_bytes);
  return Ok();
}

Status CompiledGraph::SetInput(std::string_view name, std::span<const int32_t> values) {
  return SetInputBytes(name, DType::kI32, values.data(), static_cast<int64_t>(values.size()));
}

Status CompiledGraph::SetInput(std::string_view name, std::span<const float> values) {
  return SetInputBytes(name, DType::kF32, values.data(), static_cast<int64_t>(values.size()));
}

Status CompiledGraph::Run(const KvCacheView* kv_cache) {
  const ExecContext context{.kv_cache = kv_cache,
                            .scratch = {scratch_.data(), static_cast<size_t>(scratch_.size())}};
  const std::span<const Node> nodes = graph_.nodes();
  for (const Partition& partition : placement_.partitions) {
    Backend& backend = *backends_[partition.backend];
    for (int32_t i = partition.begin; i < partition.end; ++i) {
      const Node& node = nodes[i];
      if (node.is_view()) continue;
      const auto start =
          profile_ ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
      Status status = backend.Execute(node, node_args_[i], args_[node.output.index], context);
      if (profile_) {
        const auto elapsed = std::chrono::steady_clock::now() - start;
        profile_->Add(profile_rows_[i],
                      std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed).count());
      }
      if (!status) {
        return std::unexpected(std::move(status.error())
                                   .WithContext("node '" + node.name + "' (" +
                                                std::string(node.op_name()) + ") on " +
                                                std::string(backend.name())));
      }
    }
  }
  return Ok();
}

// A node's profile row: its op, plus the type of the weight matrix it reads, if any (the type
// decides which kernel runs and how many bytes it streams).
void CompiledGraph::set_profile(OpProfile* profile) {
  profile_ = profile;
  profile_rows_.assign(graph_.nodes().size(), -1);
  if (profile == nullptr) return;
  const std::span<const Node> nodes = graph_.nodes();
  for (size_t i = 0; i < nodes.size(); ++i) {
    std::string op(nodes[i].op_name());
    for (const ValueId input : nodes[i].inputs) {
      const Value& value = graph_.value(input);
      if (graph_.memory_of(value).kind == ValueKind::kWeight && value.shape.size() >= 2) {
        op.append(" ").append(DTypeName(value.dtype));
        break;
      }
    }
    const Backend* backend = backends_[placement_.nodes[i].backend];
    profile_rows_[i] = profile->RowFor(op, backend->name());
  }
}

Result<std::span<const float>> CompiledGraph::OutputF32(size_t index) const {
  if (index >= graph_.outputs().size()) {
    return NotFound("graph output " + std::to_string(index) + " of " +
                    std::to_string(graph_.outputs().size()));
  }
  const Value& value = graph_.value(graph_.outputs()[index]);
  if (value.dtype != DType::kF32 || !value.contiguous()) {
    return InvalidInput("graph output '" + value.name + "' is not contiguous f32");
  }
  const TensorArg& arg = args_[graph_.outputs()[index].index];
  return std::span<const float>(arg.as<const float>(), static_cast<size_t>(value.elements()));
}

}  // namespace kite
