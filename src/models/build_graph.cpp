#include "models/build_graph.h"

namespace kite {

Result<Graph> BuildModelGraph(const ModelSpec& spec, const PhaseOptions& phase) {
  if (spec.family == "llama") return BuildLlamaGraph(spec, phase);
  return Unsupported(spec.source + ": no graph builder for model family '" + spec.family +
                     "' (known: llama)");
}

}  // namespace kite
