// The convert ops at NPU <-> CPU boundaries (backends/npusim/support/npu_boundaries.h), priced. A
// value an NPU op wrote and a CPU op reads is dequantized to f32 ("<producer>.to_cpu"); one a CPU
// op wrote and an NPU op reads is quantized to the activation width ("<producer>.to_npu") — what
// graph/passes/explicit_fallback.h inserts into a graph with encodings. The NPU runs both (QNN's
// HTP op set has Quantize and Dequantize), so each costs its bytes (the activation read at its
// width and written as f32, or the reverse) over the bandwidth the NPU reaches, overlapped with
// the per-op overhead as for every NPU op; it moves data and computes nothing worth counting.
#pragma once

#include <span>
#include <string_view>
#include <vector>

#include "graph/graph.h"
#include "profile/chip.h"
#include "profile/cost_model.h"
#include "profile/recipe.h"

namespace kite {

inline constexpr std::string_view kConvertOp = "convert";

// Per node of `graph` (indexed as graph.nodes()), the converts of the values it produces, given
// where every node runs (`units`, per node; views ignored: a view's readers read its source).
std::vector<std::vector<OpCost>> ConvertCosts(const Graph& graph,
                                              std::span<const ComputeUnit> units, const Chip& chip,
                                              const Recipe& recipe);

}  // namespace kite
