// The activation memory plan: one arena per graph, with every value's offset fixed when the
// graph is compiled, so a run allocates nothing.
//
// Each value that owns memory (graph inputs and non-view node outputs) gets a buffer, live from
// the step that defines it to its last reader; buffers whose lifetimes overlap never share bytes.
// Views own nothing: they read their source's buffer, and their readers keep it alive. Weights
// stay in the model file's mapping. Graph inputs and outputs live for the whole run (inputs so a
// caller may bind them once and run again; outputs so the caller can read them after the run).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "base/status.h"
#include "graph/graph.h"

namespace kite {

// Step s runs node s - 1; graph inputs are defined at step 0. The last step is nodes + 1, after
// the last node, where outputs are read.
struct ArenaBuffer {
  ValueId value;
  uint64_t offset = 0;  // bytes from the arena start, a multiple of the alignment
  uint64_t bytes = 0;   // the value's size rounded up to the alignment
  int32_t first_step = 0;
  int32_t last_step = 0;  // inclusive
};

struct MemoryPlan {
  uint64_t alignment = 64;
  uint64_t arena_bytes = 0;
  std::vector<ArenaBuffer> buffers;
  std::vector<int32_t> buffer_of;  // per value: its (source's) buffer, or -1 for weight memory

  // Byte offset of the value's first element in the arena, or nullopt when the value is a
  // weight or a view of one.
  std::optional<uint64_t> ArenaOffset(const Graph& graph, ValueId value) const;
};

// Greedy best-fit: buffers in order of decreasing size, each at the lowest-waste gap left by
// the buffers already placed whose lifetimes overlap it. `alignment` is a power of two.
Result<MemoryPlan> PlanMemory(const Graph& graph, uint64_t alignment = 64);

}  // namespace kite
