#include "graph/passes/pass_manager.h"

#include <map>
#include <utility>

#include "graph/op_rules.h"

namespace kite {

namespace {

std::string Named(const Value& value) { return rules::Describe("'" + value.name + "'", value); }

// The inputs (by name, dtype, shape, in order) and the outputs (dtype and shape, in order) that
// callers bind and read must be those of the graph before the pass.
Status CheckSameInterface(const Graph& before, const Graph& after) {
  if (before.inputs().size() != after.inputs().size()) {
    return InvalidInput("the graph had " + std::to_string(before.inputs().size()) +
                        " inputs, now " + std::to_string(after.inputs().size()));
  }
  for (size_t i = 0; i < before.inputs().size(); ++i) {
    const Value& was = before.value(before.inputs()[i]);
    const Value& now = after.value(after.inputs()[i]);
    if (was.name != now.name || was.dtype != now.dtype || was.shape != now.shape) {
      return InvalidInput("input " + std::to_string(i) + " was " + Named(was) + ", now " +
                          Named(now));
    }
  }
  if (before.outputs().size() != after.outputs().size()) {
    return InvalidInput("the graph had " + std::to_string(before.outputs().size()) +
                        " outputs, now " + std::to_string(after.outputs().size()));
  }
  for (size_t i = 0; i < before.outputs().size(); ++i) {
    const Value& was = before.value(before.outputs()[i]);
    const Value& now = after.value(after.outputs()[i]);
    if (was.dtype != now.dtype || was.shape != now.shape) {
      return InvalidInput("output " + std::to_string(i) + " was " + Named(was) + ", now " +
                          Named(now));
    }
  }
  return Ok();
}

}  // namespace

std::string ReportString(std::span<const PassReport> report) {
  std::string out;
  for (const PassReport& r : report) {
    out += r.pass + ": " + std::to_string(r.changes) + " changes, " +
           std::to_string(r.nodes_before) + " -> " + std::to_string(r.nodes_after) + " nodes";
    if (!r.summary.empty()) out += " (" + r.summary + ")";
    out += "\n";
  }
  return out;
}

Status VerifyRewrite(const Graph& before, const Graph& after) {
  KITE_RETURN_IF_ERROR(CheckSameInterface(before, after));
  std::map<uint64_t, const Value*> by_id;
  for (const Graph* graph : {&before, &after}) {
    for (int32_t i = 0; i < graph->num_values(); ++i) {
      const Value& value = graph->value(ValueId{i});
      if (value.kind != ValueKind::kWeight) continue;
      const auto [it, inserted] = by_id.emplace(value.weight_id, &value);
      const Value& first = *it->second;
      if (!inserted &&
          (first.data != value.data || first.dtype != value.dtype || first.shape != value.shape)) {
        return Internal("weights " + Named(first) + " and " + Named(value) + " share id " +
                        std::to_string(value.weight_id) +
                        " but not their bytes: a rewritten weight needs a new id "
                        "(tensor/weight_store.h), or a backend runs on what it prepared from "
                        "the old bytes");
      }
    }
  }
  return Ok();
}

Result<Graph> PassManager::Run(Graph graph, std::vector<PassReport>* report) {
  for (const std::unique_ptr<Pass>& pass : passes_) {
    const std::string what = "pass " + std::string(pass->name());
    auto outcome = pass->Run(graph);
    if (!outcome) return std::unexpected(std::move(outcome.error()).WithContext(what));
    Status valid = VerifyRewrite(graph, outcome->graph);
    if (!valid) return std::unexpected(std::move(valid.error()).WithContext(what));
    if (report != nullptr) {
      report->push_back(
          PassReport{.pass = std::string(pass->name()),
                     .changes = outcome->changes,
                     .summary = outcome->summary,
                     .nodes_before = static_cast<int32_t>(graph.nodes().size()),
                     .nodes_after = static_cast<int32_t>(outcome->graph.nodes().size())});
    }
    graph = std::move(outcome->graph);
  }
  return graph;
}

}  // namespace kite
