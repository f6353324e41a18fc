// Where a placement crosses between the NPU and the CPU: each node output that a node on the
// other unit reads (through views) needs one convert — dequantize to f32 for the CPU, quantize to
// the activation encoding for the NPU. explicit_fallback (graph/passes/) inserts them into a graph
// that states its encodings; the cost model (profile/convert_cost.h) prices them; `kite inspect
// --placement --chip` lists them. The token embedding is no boundary: the runtime writes its rows
// at the NPU's width itself.
#pragma once

#include <cstdint>
#include <vector>

#include "graph/graph.h"

namespace kite {

struct NpuBoundary {
  int32_t producer = -1;  // the node whose output crosses
  int32_t reader = -1;    // the first node on the other unit that reads it
  bool to_cpu = false;    // NPU -> CPU (dequantize); else CPU -> NPU (quantize)
};

// In node order of the producers, then of the readers. `on_npu` has one entry per node (views'
// entries are ignored: a view's readers read what it views).
std::vector<NpuBoundary> NpuBoundaries(const Graph& graph, const std::vector<bool>& on_npu);

}  // namespace kite
