// OpProfile: where a compiled graph's time goes. CompiledGraph::Run, when given a profile, times
// each node and adds it to the row of its op kind, weight type and backend ("MatMul q4_0" on
// cpu), so `kite bench --profile` can say which ops a token's time is spent in, the way QNN's
// per-op profiling does for a graph.
//
//   OpProfile profile;
//   engine->set_profile(&profile);   // every compiled graph, now and later
//   ... run ...
//   for (const OpProfile::Row& row : profile.SortedRows()) ...
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kite {

class OpProfile {
 public:
  struct Row {
    std::string op;       // op kind, with the weight type when the op reads one: "MatMul q4_0"
    std::string backend;  // the backend that ran it
    int64_t calls = 0;
    uint64_t ns = 0;
  };

  // The index of the row for (op, backend), added on first use. Indices stay valid.
  int32_t RowFor(std::string_view op, std::string_view backend);
  void Add(int32_t row, uint64_t ns) {
    ++rows_[row].calls;
    rows_[row].ns += ns;
  }
  // Zeroes every row's calls and time (the rows stay, so graphs keep their indices).
  void Clear();

  uint64_t total_ns() const;
  // The rows that ran, most time first.
  std::vector<Row> SortedRows() const;

 private:
  std::vector<Row> rows_;
};

}  // namespace kite
