// Splitting a compiled graph where one piece would not fit an NPU session: HTP gives each
// session (one context binary's graphs) a memory limit, 2 GB (Qualcomm's Genie runs Llama 3 8B
// as several context binaries for this reason), so a graph whose weights, KV cache and
// activations exceed it is cut into pieces of consecutive layers, each under the limit.
//
// A layer's bytes are the weights its nodes read (each weight once), its K and V caches at the
// compiled context, and the activations of its busiest node (inputs and output); a piece's are
// the sum of its layers' weights and caches plus the largest of their activations. Nodes outside
// the blocks count with the block before them (the first block for those before any); the
// embedding lookup counts nothing, because the runtime gathers its rows on the CPU.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "graph/graph.h"

namespace kite {

struct SessionSizes {
  int64_t kv_heads = 0, head_dim = 0;  // per layer (Model::kv_layout)
  int64_t context = 0;                 // positions the compiled KV cache holds
  double kv_bytes = 0;                 // per cached element (8-bit KV: 1)
  double activation_bytes = 0;         // per activation element the NPU holds
  uint64_t limit = 0;                  // bytes a piece may take
};

struct SessionPiece {
  int32_t first_layer = 0, last_layer = 0;  // blocks, inclusive
  uint64_t weight_bytes = 0, kv_bytes = 0, activation_bytes = 0;
  uint64_t bytes() const { return weight_bytes + kv_bytes + activation_bytes; }
};

// The pieces, in layer order (one when the whole graph fits). InvalidInput naming the layer,
// its bytes and the limit when one layer alone exceeds it (nothing smaller can be split off).
Result<std::vector<SessionPiece>> SplitForSession(const Graph& graph, const SessionSizes& sizes);

}  // namespace kite
