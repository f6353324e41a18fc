#include "runtime/op_profile.h"

#include <algorithm>

#include "runtime/executable.h"

namespace kite {

int32_t OpProfile::RowFor(std::string_view op, std::string_view backend) {
  for (size_t i = 0; i < rows_.size(); ++i) {
    if (rows_[i].op == op && rows_[i].backend == backend) return static_cast<int32_t>(i);
  }
  rows_.push_back(Row{.op = std::string(op), .backend = std::string(backend)});
  return static_cast<int32_t>(rows_.size() - 1);
}

void OpProfile::Clear() {
  for (Row& row : rows_) row.calls = 0, row.ns = 0;
}

uint64_t OpProfile::total_ns() const {
  uint64_t total = 0;
  for (const Row& row : rows_) total += row.ns;
  return total;
}

std::vector<OpProfile::Row> OpProfile::SortedRows() const {
  std::vector<Row> rows;
  std::copy_if(rows_.begin(), rows_.end(), std::back_inserter(rows),
               [](const Row& row) { return row.calls > 0; });
  std::stable_sort(rows.begin(), rows.end(),
                   [](const Row& a, const Row& b) { return a.ns > b.ns; });
  return rows;
}

// A node's row: its op, plus the type of the weight matrix it reads, if any (the type decides
// which kernel runs and how many bytes it streams).
const std::vector<int32_t>& OpProfile::RowsOf(const Executable& executable) {
  const auto [it, added] = node_rows_.try_emplace(executable.id());
  if (!added) return it->second;
  const Graph& graph = executable.graph();
  const Placement& placement = executable.placement();
  const std::span<const Node> nodes = graph.nodes();
  it->second.assign(nodes.size(), -1);
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].is_view()) continue;
    std::string op(nodes[i].op_name());
    for (const ValueId input : nodes[i].inputs) {
      const Value& value = graph.value(input);
      if (graph.memory_of(value).kind == ValueKind::kWeight && value.shape.size() >= 2) {
        op.append(" ").append(DTypeName(value.dtype));
        break;
      }
    }
    it->second[i] = RowFor(op, placement.backend_names[placement.nodes[i].backend]);
  }
  return it->second;
}

void OpProfile::BeforeNode(const Executable& executable, int32_t node) {
  start_ = std::chrono::steady_clock::now();
}

Status OpProfile::AfterNode(const Executable& executable, int32_t node, const TensorArg& output) {
  const auto elapsed = std::chrono::steady_clock::now() - start_;
  Add(RowsOf(executable)[node],
      std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed).count());
  return Ok();
}

}  // namespace kite
