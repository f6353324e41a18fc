// A pass: a named rewrite of a graph (fold, fuse, decompose, quantize). It reads a graph and
// returns a new one (graphs are read-only; graph/rewriter.h builds the copy) and says what it
// changed. One pass per file under graph/passes/; PassManager runs them in order.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"
#include "graph/graph.h"

namespace kite {

struct PassOutcome {
  Graph graph;
  int32_t changes = 0;  // rewrites made; 0 when `graph` is a plain copy
  std::string summary;  // what changed, one line, for the report
};

class Pass {
 public:
  virtual ~Pass() = default;
  // The name reports and errors use: "fold_channel_scale".
  virtual std::string_view name() const = 0;
  virtual Result<PassOutcome> Run(const Graph& graph) = 0;
};

}  // namespace kite
