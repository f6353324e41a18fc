// `kite inspect` of a compiled model (`kite compile`): the chip and recipe it was compiled for,
// its context sizes, and per graph the placement's partitions and the session splits.
#pragma once

#include <optional>
#include <string>

#include "base/status.h"
#include "cli/inspect_report.h"

namespace kite::cli {

// nullopt for a file that is not a compiled GGUF; else {"version", "chip", "hexagon", "recipe",
// "contexts", "prefill_chunk", "session_limit", "graphs": kite.compile.graphs' document}.
// InvalidInput naming the file and key when the keys or the document are malformed.
Result<std::optional<Json>> InspectCompile(const std::string& path);

// One line for the target, then per graph its partitions (unit, backend, op counts, first and
// last node) and its pieces (layers, bytes).
std::string RenderCompileText(const Json& compile);

}  // namespace kite::cli
