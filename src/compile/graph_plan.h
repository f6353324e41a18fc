// The graphs a compiled model holds: for each compiled context size a prefill chunk and a decode
// step, each built as the Engine builds it (models/, then the static activation encodings as
// quantize/dequantize pairs), placed by the partitioner on the backends that simulate the chip
// (runtime/partitioner.h), and split where a piece would exceed the session limit
// (compile/session_split.h). The result is the JSON document kite.compile.graphs holds.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/status.h"
#include "models/model.h"

namespace kite {

struct GraphPlanOptions {
  std::vector<int32_t> contexts;  // ascending
  int32_t prefill_chunk = 128;    // the prefill graph's tokens (at most each context)
  uint64_t session_limit = 0;
  std::string backend;          // preference list (backends/registry.h): "npusim,cpu"
  std::string chip;             // BackendOptions::chip: the chip file a simulating backend models
  double activation_bytes = 2;  // per activation element on the NPU
  double kv_bytes = 2;          // per KV cache element
};

// [{"phase": "prefill"|"decode", "tokens", "context",
//   "partitions": [{"backend", "unit": "NPU"|"CPU", "ops": {op: count}, "nodes": [name],
//                   "declined": [{"node", "backend", "reason"}] (only when a backend did)}],
//   "splits": [{"layers": [first, last], "bytes", "weight_bytes", "kv_bytes",
//               "activation_bytes"}]}], per context the prefill graph then the decode step.
// Errors name the graph (phase, tokens, context).
Result<nlohmann::ordered_json> PlanGraphs(const Model& model, const GraphPlanOptions& options);

// The compute unit a backend stands for in a compiled model: "NPU" for the NPU simulator.
std::string UnitOfBackend(const std::string& backend);

}  // namespace kite
