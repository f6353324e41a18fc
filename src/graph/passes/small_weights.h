// A small f32 weight a pass makes (a decomposition's constants): `values` copied into `store` as
// weight `name` of `shape`, and added to the rewriter's graph.
#pragma once

#include <set>
#include <span>
#include <string>
#include <vector>

#include "graph/rewriter.h"
#include "tensor/weight_store.h"

namespace kite {

Result<ValueId> AddF32Weight(GraphRewriter& rw, WeightStore& store, std::string name,
                             std::vector<int64_t> shape, std::span<const float> values);

// InvalidInput naming the first of `wanted` that is no `op` node ("rope") of `graph`, so a list
// meant for another graph is never half applied.
Status CheckNodesAre(const Graph& graph, const std::set<std::string>& wanted, std::string_view op,
                     std::string_view pass);

}  // namespace kite
