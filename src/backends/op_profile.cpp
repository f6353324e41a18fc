#include "backends/op_profile.h"

#include <algorithm>

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

}  // namespace kite
