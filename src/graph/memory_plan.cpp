#include "graph/memory_plan.h"

#include <algorithm>
#include <bit>
#include <numeric>

namespace kite {

namespace {

ValueId Root(const Graph& graph, ValueId id) {
  const Value& value = graph.value(id);
  return value.is_view() ? value.alias_of : id;
}

uint64_t RoundUp(uint64_t bytes, uint64_t alignment) {
  return (bytes + alignment - 1) & ~(alignment - 1);
}

}  // namespace

std::optional<uint64_t> MemoryPlan::ArenaOffset(const Graph& graph, ValueId value) const {
  const int32_t buffer = buffer_of[value.index];
  if (buffer < 0) return std::nullopt;
  const Value& v = graph.value(value);
  // Element offsets of views are in whole elements (or whole rows of blocks): exact in bytes.
  const uint64_t view_bytes = static_cast<uint64_t>(v.alias_offset) / Traits(v.dtype).block_size *
                              Traits(v.dtype).block_bytes;
  return buffers[buffer].offset + view_bytes;
}

Result<MemoryPlan> PlanMemory(const Graph& graph, uint64_t alignment) {
  if (alignment == 0 || !std::has_single_bit(alignment)) {
    return InvalidInput("arena alignment " + std::to_string(alignment) + " is not a power of two");
  }
  MemoryPlan plan;
  plan.alignment = alignment;
  plan.buffer_of.assign(graph.num_values(), -1);
  const int32_t end_step = static_cast<int32_t>(graph.nodes().size()) + 1;

  // One buffer per value that owns arena memory.
  for (int32_t i = 0; i < graph.num_values(); ++i) {
    const Value& value = graph.value(ValueId{i});
    if (value.kind == ValueKind::kWeight || value.is_view()) continue;
    const uint64_t bytes = KITE_TRY(BytesFor(value.dtype, value.elements()));
    ArenaBuffer buffer{.value = ValueId{i}, .bytes = RoundUp(bytes, alignment)};
    if (value.kind == ValueKind::kInput) {
      buffer.first_step = 0;
      buffer.last_step = end_step;
    } else {
      buffer.first_step = value.producer + 1;
      buffer.last_step = buffer.first_step;
    }
    plan.buffer_of[i] = static_cast<int32_t>(plan.buffers.size());
    plan.buffers.push_back(buffer);
  }
  for (int32_t i = 0; i < graph.num_values(); ++i) {
    const Value& value = graph.value(ValueId{i});
    if (value.is_view()) plan.buffer_of[i] = plan.buffer_of[value.alias_of.index];
  }

  // A buffer lives until the last node that reads it directly or through a view.
  const std::span<const Node> nodes = graph.nodes();
  for (size_t n = 0; n < nodes.size(); ++n) {
    if (nodes[n].is_view()) continue;  // a view reads nothing; its readers count instead
    for (ValueId input : nodes[n].inputs) {
      const int32_t buffer = plan.buffer_of[Root(graph, input).index];
      if (buffer >= 0) {
        plan.buffers[buffer].last_step =
            std::max(plan.buffers[buffer].last_step, static_cast<int32_t>(n) + 1);
      }
    }
  }
  for (ValueId output : graph.outputs()) {
    const int32_t buffer = plan.buffer_of[Root(graph, output).index];
    if (buffer >= 0) plan.buffers[buffer].last_step = end_step;
  }

  std::vector<int32_t> order(plan.buffers.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    if (plan.buffers[a].bytes != plan.buffers[b].bytes) {
      return plan.buffers[a].bytes > plan.buffers[b].bytes;
    }
    return a < b;  // ties in value order, so plans are reproducible
  });
  std::vector<int32_t> placed;
  for (int32_t index : order) {
    ArenaBuffer& buffer = plan.buffers[index];
    std::vector<const ArenaBuffer*> live;  // placed buffers alive at the same time
    for (int32_t other : placed) {
      const ArenaBuffer& o = plan.buffers[other];
      if (o.first_step <= buffer.last_step && buffer.first_step <= o.last_step) live.push_back(&o);
    }
    std::sort(live.begin(), live.end(),
              [](const ArenaBuffer* a, const ArenaBuffer* b) { return a->offset < b->offset; });
    uint64_t best_offset = 0;
    uint64_t best_gap = UINT64_MAX;
    uint64_t cursor = 0;
    for (const ArenaBuffer* o : live) {
      if (o->offset >= cursor + buffer.bytes && o->offset - cursor < best_gap) {
        best_gap = o->offset - cursor;
        best_offset = cursor;
      }
      cursor = std::max(cursor, o->offset + o->bytes);
    }
    buffer.offset = best_gap == UINT64_MAX ? cursor : best_offset;
    plan.arena_bytes = std::max(plan.arena_bytes, buffer.offset + buffer.bytes);
    placed.push_back(index);
  }
  return plan;
}

}  // namespace kite
