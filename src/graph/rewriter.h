// GraphRewriter: makes a new graph from an old one (a Graph is read-only once built), node by
// node in the old topological order, through a GraphBuilder, so every shape and dtype rule is
// checked again. For each old node a callback says what stands for its output in the new graph:
// a copy of the node (return nullopt), nodes it added in its place through builder(), or any
// value already there. Any old value may also be remapped to a new one beforehand (a weight to
// its rescaled copy); every later read of it then reads the new one.
//
//   GraphRewriter rw = KITE_TRY(GraphRewriter::Create(graph));
//   KITE_RETURN_IF_ERROR(rw.Remap(old_w, KITE_TRY(rw.builder().Weight(scaled_view))));
//   Graph out = KITE_TRY(std::move(rw).Run(
//       [&](GraphRewriter& rw, const Node& node) -> Result<std::optional<ValueId>> {
//         if (node.op() != OpKind::kSilu) return std::nullopt;                // copy it
//         return rw.builder().Gelu(node.name, KITE_TRY(rw.Map(node.inputs[0])),  // replace it
//                                  GeluApprox::kTanh);
//       }));
//
// Inputs are copied first, in order; weights when first read (one the new graph no longer
// reads is dropped); the outputs are the values that stand for the old outputs, in order.
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "base/status.h"
#include "graph/builder.h"
#include "graph/graph.h"

namespace kite {

class GraphRewriter {
 public:
  using Replace = std::function<Result<std::optional<ValueId>>(GraphRewriter&, const Node&)>;

  // `source` must outlive the rewriter.
  static Result<GraphRewriter> Create(const Graph& source);

  const Graph& source() const { return *source_; }
  // Where replacement nodes and values are added.
  GraphBuilder& builder() { return builder_; }

  // From now on, reads of old value `from` read new value `to`, which must have the same shape,
  // and the same dtype unless one of them carries an encoding (a quantized form of the same
  // numbers): InvalidInput naming both otherwise.
  Status Remap(ValueId from, ValueId to);
  // The new value that stands for old value `from`: its remap, or its copy (a weight is copied
  // on first use). Internal when `from` is a node output whose node was not rewritten yet.
  Result<ValueId> Map(ValueId from);
  // Adds `node` to the new graph with its inputs mapped (and its output encoding kept).
  Result<ValueId> Copy(const Node& node);

  // Rewrites every node in order with `replace` and returns the new graph. An error names the
  // node being rewritten.
  Result<Graph> Run(const Replace& replace) &&;

 private:
  explicit GraphRewriter(const Graph& source);

  const Graph* source_;
  GraphBuilder builder_;
  std::vector<ValueId> map_;  // old value index -> new value (invalid: not mapped yet)
};

}  // namespace kite
