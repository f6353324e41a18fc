// PassManager: runs passes in the order they were added and checks each result before the next
// pass sees it. A pass must keep the graph's interface (the same inputs by name, dtype and shape;
// the same outputs' shapes and dtypes, in order) and the weight-id contract of
// tensor/weight_store.h (one id, one set of bytes: a rewritten weight has a new id, or a backend
// would run on what it prepared from the old bytes). An error names the pass.
//
//   PassManager passes;
//   passes.Add(std::make_unique<FoldChannelScale>(&store, scales));
//   std::vector<PassReport> report;
//   Graph folded = KITE_TRY(passes.Run(std::move(graph), &report));
//   // report[0]: {"fold_channel_scale", 9, "blk.0.attn_norm -> 3 matmuls, ..."}
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "graph/graph.h"
#include "graph/passes/pass.h"

namespace kite {

struct PassReport {
  std::string pass;
  int32_t changes = 0;
  std::string summary;
  int32_t nodes_before = 0;
  int32_t nodes_after = 0;
};

// One line per pass: "fold_channel_scale: 9 changes, 20 -> 20 nodes (blk.0.attn_norm -> ...)".
std::string ReportString(std::span<const PassReport> report);

// Checks a pass's result `after` against its input `before`, for what the builder cannot see:
// InvalidInput when the interface changed (naming the input or output), Internal naming both
// weights when two weight values (in either graph) share an id but not their bytes, dtype or
// shape.
Status VerifyRewrite(const Graph& before, const Graph& after);

class PassManager {
 public:
  void Add(std::unique_ptr<Pass> pass) { passes_.push_back(std::move(pass)); }
  size_t size() const { return passes_.size(); }

  // Runs every pass in order, each result checked by VerifyRewrite before the next pass sees
  // it. `report` (if given) gets one entry per pass that ran.
  Result<Graph> Run(Graph graph, std::vector<PassReport>* report = nullptr);

 private:
  std::vector<std::unique_ptr<Pass>> passes_;
};

}  // namespace kite
