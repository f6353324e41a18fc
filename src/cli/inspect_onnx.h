// `kite inspect model.onnx [--placement]`: how Kite's ONNX import (models/onnx_import.h) read
// the graph — the sizes it bound, the KV inputs that became its paged KV cache, how many nodes
// folded to constants, which ONNX nodes each Kite op was fused from, and every node it could not
// map with why.
#pragma once

#include <string>

#include "base/status.h"
#include "cli/inspect_report.h"

namespace kite::cli {

// {"onnx": {"file", "producer", "opsets", "bindings", "kv_cache_inputs", "folded_nodes",
// "fused": [{"kite_op", "layer", "onnx_nodes": [{"name", "op"}]}], "unmapped": [...], "error"}}.
// An error only for a file that cannot be read or bound; a graph Kite does not recognise is a
// report with "error" and "unmapped" set.
Result<Json> InspectOnnx(const std::string& path);

// Whether the report says the import would succeed.
bool OnnxImportable(const Json& report);

std::string RenderOnnxText(const Json& report);

}  // namespace kite::cli
