#include "runtime/executable.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <optional>

#include "tensor/tensor.h"

namespace kite {

namespace {

uint64_t NextExecutableId() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

// Hands a compiled partition's node events to the run's Observer, with the executable.
class ObserverListener final : public NodeListener {
 public:
  ObserverListener(const Executable& executable, Observer& observer)
      : executable_(executable), observer_(observer) {}
  void BeforeNode(int32_t node) override { observer_.BeforeNode(executable_, node); }
  Status AfterNode(int32_t node, const TensorArg& output) override {
    return observer_.AfterNode(executable_, node, output);
  }

 private:
  const Executable& executable_;
  Observer& observer_;
};

std::vector<TensorArg> InputArgs(const Node& node, std::span<const TensorArg> args) {
  std::vector<TensorArg> inputs;
  for (ValueId input : node.inputs) inputs.push_back(args[input.index]);
  return inputs;
}

}  // namespace

Result<std::unique_ptr<Executable>> Executable::Compile(Graph graph,
                                                        std::span<Backend* const> backends) {
  std::unique_ptr<Executable> compiled(new Executable());
  compiled->id_ = NextExecutableId();
  compiled->placement_ = KITE_TRY(PartitionGraph(graph, backends));
  compiled->plan_ = KITE_TRY(PlanMemory(graph, AlignedBuffer::kAlignment));

  compiled->args_.resize(graph.num_values());
  for (int32_t i = 0; i < graph.num_values(); ++i) {
    const Value& value = graph.value(ValueId{i});
    TensorArg& arg = compiled->args_[i];
    arg.dtype = value.dtype;
    arg.shape = value.shape;
    arg.strides = value.strides;
    if (compiled->plan_.ArenaOffset(graph, ValueId{i})) continue;  // bound by each RunState
    // A weight or a view of one; kernels only read it.
    const Value& source = graph.memory_of(value);
    const uint64_t view_bytes = KITE_TRY(BytesFor(value.dtype, value.alias_offset));
    arg.data = const_cast<std::byte*>(static_cast<const std::byte*>(source.data)) + view_bytes;
  }
  // The partitions keep a reference to the graph: it is in its final place first.
  compiled->graph_ = std::move(graph);
  for (int32_t i = 0; i < compiled->graph_.num_values(); ++i) {
    const auto& encoding = compiled->graph_.value(ValueId{i}).encoding;
    if (encoding) compiled->args_[i].encoding = &*encoding;
  }
  for (const Partition& partition : compiled->placement_.partitions) {
    const Backend& backend = *backends[partition.backend];
    auto part = backend.Compile(compiled->graph_, partition, compiled->args_);
    if (!part) {
      return std::unexpected(std::move(part.error())
                                 .WithContext("compiling nodes " + std::to_string(partition.begin) +
                                              ".." + std::to_string(partition.end - 1) + " on " +
                                              std::string(backend.name())));
    }
    compiled->scratch_bytes_ = std::max(compiled->scratch_bytes_, (*part)->scratch_bytes());
    compiled->partitions_.push_back(std::move(*part));
  }
  return compiled;
}

Result<std::unique_ptr<RunState>> Executable::NewRunState() const {
  std::unique_ptr<RunState> state(new RunState(*this));
  auto arena = AlignedBuffer::Allocate(plan_.arena_bytes);
  if (!arena) return std::unexpected(std::move(arena.error()).WithContext("activation arena"));
  state->arena_ = std::move(*arena);
  auto scratch = AlignedBuffer::Allocate(scratch_bytes_);
  if (!scratch) return std::unexpected(std::move(scratch.error()).WithContext("kernel scratch"));
  state->scratch_ = std::move(*scratch);

  state->args_ = args_;
  for (int32_t i = 0; i < graph_.num_values(); ++i) {
    if (const auto offset = plan_.ArenaOffset(graph_, ValueId{i})) {
      state->args_[i].data = state->arena_.data() + *offset;
    }
  }
  const std::span<const Node> nodes = graph_.nodes();
  state->node_args_.resize(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    state->node_args_[i] = InputArgs(nodes[i], state->args_);
  }
  return state;
}

Status RunState::SetInputBytes(std::string_view name, DType dtype, const void* data,
                               int64_t count) {
  const Graph& graph = executable_.graph();
  const std::optional<ValueId> id = graph.FindInput(name);
  if (!id) return NotFound("graph has no input named '" + std::string(name) + "'");
  const Value& input = graph.value(*id);
  if (input.dtype != dtype || input.elements() != count) {
    return InvalidInput("input '" + std::string(name) + "' is " + ShapeString(input.shape) + " " +
                        std::string(DTypeName(input.dtype)) + ", given " + std::to_string(count) +
                        " " + std::string(DTypeName(dtype)) + " elements");
  }
  std::memcpy(args_[id->index].data, data, count * Traits(dtype).block_bytes);
  return Ok();
}

Status RunState::SetInput(std::string_view name, std::span<const int32_t> values) {
  return SetInputBytes(name, DType::kI32, values.data(), static_cast<int64_t>(values.size()));
}

Status RunState::SetInput(std::string_view name, std::span<const float> values) {
  return SetInputBytes(name, DType::kF32, values.data(), static_cast<int64_t>(values.size()));
}

Status Executable::Run(RunState& state, const RunContext& context) const {
  if (&state.executable_ != this) {
    return InvalidInput("a run state made by another executable (NewRunState of this one)");
  }
  const ExecContext exec{
      .kv_cache = context.kv_cache,
      .scratch = {state.scratch_.data(), static_cast<size_t>(state.scratch_.size())}};
  const RunArgs args{.values = state.args_, .node_inputs = state.node_args_};
  std::optional<ObserverListener> listener;
  if (context.observer) listener.emplace(*this, *context.observer);
  for (const std::unique_ptr<CompiledPartition>& partition : partitions_) {
    KITE_RETURN_IF_ERROR(partition->Run(args, exec, listener ? &*listener : nullptr));
  }
  return Ok();
}

Result<std::span<const float>> RunState::OutputF32(size_t index) const {
  const Graph& graph = executable_.graph();
  if (index >= graph.outputs().size()) {
    return NotFound("graph output " + std::to_string(index) + " of " +
                    std::to_string(graph.outputs().size()));
  }
  const Value& value = graph.value(graph.outputs()[index]);
  if (value.dtype != DType::kF32 || !value.contiguous()) {
    return InvalidInput("graph output '" + value.name + "' is not contiguous f32");
  }
  const TensorArg& arg = args_[graph.outputs()[index].index];
  return std::span<const float>(arg.as<const float>(), static_cast<size_t>(value.elements()));
}

}  // namespace kite
