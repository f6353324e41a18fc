// `kite inspect MODEL --placement --chip NAME`: where each node of the decode step and of a
// prefill chunk runs on that chip's NPU — NPU or CPU and the support rule's reason
// (backends/npusim/support/npu_support.h) — after the graph was made ready for the chip
// (decompositions, explicit convert ops at every NPU <-> CPU boundary; prepare_for_npu.h).
#pragma once

#include <string>

#include "base/status.h"
#include "cli/inspect_report.h"
#include "runtime/engine.h"

namespace kite::cli {

// {"model", "chip": {"name", "hexagon"}, "assumed_activations", "context",
//  "graphs": [{"phase", "tokens", "npu", "cpu", "convert_nodes",
//              "boundaries": [{"value", "to": "CPU"|"NPU", "reader"}], "passes": [...],
//              "decomposed": [{"node", "op", "reason"}],
//              "nodes": [{"node", "op", "unit", "reason"?}]}]} (views left out).
// NotFound listing the chips for an unknown `chip`.
Result<Json> InspectNpuPlacement(const std::string& path, const EngineOptions& options,
                                 const std::string& chip);

// Per graph: the counts, the decompositions, then one line per node.
std::string RenderNpuPlacementText(const Json& placement);

}  // namespace kite::cli
