// From a ModelSpec to the graph of one phase: a prefill chunk of T tokens or a decode step
// (T = 1). Each architecture family has its own builder file (models/llama.cpp); this picks it.
#pragma once

#include <cstdint>

#include "base/status.h"
#include "graph/graph.h"
#include "models/model_spec.h"

namespace kite {

struct PhaseOptions {
  int32_t tokens = 1;  // T: the graph takes inputs "tokens" [T] i32 and "positions" [T] i32
  // Logits for every token ([T, vocab], for perplexity) or only for the last ([1, vocab], for
  // generation: the final norm and lm_head then run on one row).
  bool all_logits = false;
};

// The graph's single output is the logits, f32. Weights are used in place: `spec` must outlive
// the graph.
Result<Graph> BuildModelGraph(const ModelSpec& spec, const PhaseOptions& phase);

// The Llama family: Llama 2/3, Mistral, Qwen2 (see models/llama.cpp).
Result<Graph> BuildLlamaGraph(const ModelSpec& spec, const PhaseOptions& phase);

}  // namespace kite
