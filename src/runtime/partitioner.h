// The partitioner: places every node on the first backend (in the caller's order of
// preference) that supports it, unless a later one that supports it costs less (both must say:
// Backend::Cost), and groups consecutive nodes on one backend into partitions.
// The placement keeps every refusal with its reason: `kite inspect --placement` prints it,
// because unsupported ops are the first wall users hit on NPUs.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "base/status.h"
#include "graph/graph.h"

namespace kite {

struct Declined {
  std::string backend;
  std::string reason;
};

struct NodePlacement {
  int32_t backend = -1;            // index into Placement::backend_names
  std::vector<Declined> declined;  // the more preferred backends that said no, in order
};

struct Placement {
  std::vector<std::string> backend_names;
  std::vector<NodePlacement> nodes;   // per node
  std::vector<Partition> partitions;  // in node order

  // A table, one node per line: index, op, node name, backend, and each refusal with its
  // reason; then one line per partition.
  std::string Report(const Graph& graph) const;
};

// Views run nowhere (they cost nothing); they join the partition of the node before them, so
// they never split one. Error (Unsupported) when a node is refused by every backend, naming it
// and every reason.
Result<Placement> PartitionGraph(const Graph& graph, std::span<Backend* const> backends);

}  // namespace kite
