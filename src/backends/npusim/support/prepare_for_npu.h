// A graph made ready for one chip's NPU: the nodes the support rules refuse with a decomposition
// are rewritten by their pass (decompose_rope, decompose_softcap), and what the rules still
// refuse is marked for the CPU with explicit convert ops (explicit_fallback). The npusim
// backend's Supports then says yes to every node the NPU keeps and no, with the same reason, to
// the rest, so the partitioner's placement is the one reported here.
#pragma once

#include <string>
#include <vector>

#include "backends/npusim/support/npu_support.h"
#include "graph/graph.h"
#include "tensor/weight_store.h"

namespace kite {

struct NpuGraph {
  Graph graph;
  std::vector<std::string> passes = {};  // one summary line per pass that changed something
};

// `store` keeps the decompositions' tables and must outlive the graph. The decomposition of a
// rope needs target.context > 0 (its tables' length): InvalidInput otherwise.
Result<NpuGraph> PrepareForNpu(const Graph& graph, const NpuTarget& target, WeightStore* store);

}  // namespace kite
