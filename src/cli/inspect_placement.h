// `kite inspect MODEL --placement`: where each node of the decode step and of a prefill chunk
// runs, and why the backends before it declined. Unsupported ops are the first wall a user hits
// on an NPU, so the reasons are printed in full.
#pragma once

#include <string>

#include "base/status.h"
#include "cli/inspect_report.h"
#include "runtime/engine.h"

namespace kite::cli {

// Loads `path` with `options`, compiles the decode step and one full prefill chunk, and returns
// {"model", "backend", "kv_cache": {"type", "context", "bytes", "bytes_per_token"},
// "graphs": [{"phase", "tokens", "nodes": {backend: count}, "partitions",
// "declined": [{"node", "op", "backend", "reason"}], "placement": [{"node", "op", "backend"}]}]}
// (views, which run nowhere, left out) plus, in "report", the node table for people.
Result<Json> InspectPlacement(const std::string& path, const EngineOptions& options);

// The document for --json: InspectPlacement's without the text tables.
Json PlacementJson(Json placement);

// Per graph: a one-line count per backend, then the node table.
std::string RenderPlacementText(const Json& placement);

}  // namespace kite::cli
