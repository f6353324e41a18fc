// OpProfile: where an executable's time goes. An Observer of runs: it times each node and adds it
// to the row of its op kind, weight type and backend ("MatMul q4_0" on cpu), so `kite bench
// --profile` can say which ops a token's time is spent in, the way QNN's per-op profiling does
// for a graph. It watches one run at a time.
//
//   OpProfile profile;
//   session.set_observer(&profile);  // every run of the session's graphs, until set to nullptr
//   ... run ...   (or executable->Run(state, {.observer = &profile}))
//   for (const OpProfile::Row& row : profile.SortedRows()) ...
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "runtime/observer.h"

namespace kite {

class OpProfile final : public Observer {
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

  void BeforeNode(const Executable& executable, int32_t node) override;
  Status AfterNode(const Executable& executable, int32_t node, const TensorArg& output) override;

 private:
  // Each node's row in an executable, made on the executable's first run.
  const std::vector<int32_t>& RowsOf(const Executable& executable);

  std::vector<Row> rows_;
  std::unordered_map<uint64_t, std::vector<int32_t>> node_rows_;  // by Executable::id()
  std::chrono::steady_clock::time_point start_;
};

}  // namespace kite
