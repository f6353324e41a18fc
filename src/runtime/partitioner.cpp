#include "runtime/partitioner.h"

#include <algorithm>
#include <optional>

namespace kite {

Result<Placement> PartitionGraph(const Graph& graph, std::span<Backend* const> backends) {
  if (backends.empty()) return InvalidInput("partitioner: no backends given");
  Placement placement;
  for (const Backend* backend : backends) placement.backend_names.emplace_back(backend->name());

  const std::span<const Node> nodes = graph.nodes();
  placement.nodes.resize(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node& node = nodes[i];
    if (node.is_view()) continue;
    NodePlacement& place = placement.nodes[i];
    std::vector<Declined> declined;
    std::optional<double> cost;  // the chosen backend's
    for (size_t b = 0; b < backends.size(); ++b) {
      // Without a cost for the chosen one, no later backend can win the node.
      if (place.backend >= 0 && !cost) break;
      SupportResult support = backends[b]->Supports(graph, node);
      if (!support.ok) {
        declined.push_back({placement.backend_names[b], std::move(support.reason)});
        continue;
      }
      const std::optional<double> here = backends[b]->Cost(graph, node);
      if (place.backend < 0 || (here && *here < *cost)) {
        place.backend = static_cast<int32_t>(b);
        place.declined = declined;  // those preferred over it
        cost = here;
      }
    }
    if (place.backend < 0) place.declined = std::move(declined);
    if (place.backend < 0) {
      std::string reasons;
      for (const Declined& d : place.declined) reasons += "; " + d.backend + ": " + d.reason;
      return Unsupported("node '" + node.name + "' (" + std::string(node.op_name()) +
                         ") is supported by no backend" + reasons);
    }
  }

  // Views take the backend of the nearest node before them (after, at the graph's start).
  int32_t previous = -1;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (!nodes[i].is_view()) {
      previous = placement.nodes[i].backend;
    } else if (previous >= 0) {
      placement.nodes[i].backend = previous;
    }
  }
  int32_t next = 0;
  for (size_t i = nodes.size(); i-- > 0;) {
    if (placement.nodes[i].backend >= 0) {
      next = placement.nodes[i].backend;
    } else {
      placement.nodes[i].backend = next;
    }
  }

  for (size_t i = 0; i < nodes.size(); ++i) {
    const int32_t backend = placement.nodes[i].backend;
    if (placement.partitions.empty() || placement.partitions.back().backend != backend) {
      placement.partitions.push_back({backend, static_cast<int32_t>(i), static_cast<int32_t>(i)});
    }
    placement.partitions.back().end = static_cast<int32_t>(i) + 1;
  }
  return placement;
}

std::string Placement::Report(const Graph& graph) const {
  const std::span<const Node> nodes = graph.nodes();
  size_t op_width = 2;
  size_t name_width = 4;
  for (const Node& node : nodes) {
    op_width = std::max(op_width, node.op_name().size());
    name_width = std::max(name_width, node.name.size());
  }
  auto pad = [](std::string s, size_t width) {
    s.resize(std::max(s.size(), width), ' ');
    return s;
  };
  std::string out = pad("#", 5) + pad("op", op_width + 2) + pad("node", name_width + 2) +
                    "backend  declined by\n";
  for (size_t i = 0; i < nodes.size() && i < this->nodes.size(); ++i) {
    const NodePlacement& place = this->nodes[i];
    std::string line = pad(std::to_string(i), 5) +
                       pad(std::string(nodes[i].op_name()), op_width + 2) +
                       pad(nodes[i].name, name_width + 2) + pad(backend_names[place.backend], 9);
    if (nodes[i].is_view()) line += "(view: no kernel)";
    for (size_t d = 0; d < place.declined.size(); ++d) {
      line += (d ? "; " : "") + place.declined[d].backend + ": " + place.declined[d].reason;
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  for (size_t p = 0; p < partitions.size(); ++p) {
    const Partition& part = partitions[p];
    out += "partition " + std::to_string(p) + ": " + backend_names[part.backend] + ", nodes " +
           std::to_string(part.begin) + ".." + std::to_string(part.end - 1) + " (" +
           std::to_string(part.end - part.begin) + ")\n";
  }
  return out;
}

}  // namespace kite
