#include "compile/session_split.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "export/weight_types.h"

namespace kite {

namespace {

struct LayerNeeds {
  std::set<uint64_t> weight_ids;
  uint64_t weight_bytes = 0;
  uint64_t activation_bytes = 0;  // the busiest node's
};

uint64_t Bytes(double elements, double per_element) {
  return static_cast<uint64_t>(std::ceil(elements * per_element));
}

// Per block, what its nodes (and the nodes outside blocks around it) need.
std::vector<LayerNeeds> NeedsByLayer(const Graph& graph, const SessionSizes& sizes) {
  std::vector<LayerNeeds> layers;
  int32_t current = 0;
  for (const Node& node : graph.nodes()) {
    if (node.is_view() || node.op() == OpKind::kEmbedding) continue;
    const int64_t layer = LayerOfTensor(node.name);
    if (layer >= 0) current = static_cast<int32_t>(layer);
    if (layers.size() <= static_cast<size_t>(current)) layers.resize(current + 1);
    LayerNeeds& needs = layers[current];
    double activations = static_cast<double>(graph.value(node.output).elements());
    for (ValueId id : node.inputs) {
      const Value& input = graph.value(id);
      if (input.kind != ValueKind::kWeight) {
        activations += static_cast<double>(input.elements());
      } else if (needs.weight_ids.insert(input.weight_id).second) {
        needs.weight_bytes += input.bytes;
      }
    }
    needs.activation_bytes =
        std::max(needs.activation_bytes, Bytes(activations, sizes.activation_bytes));
  }
  return layers;
}

}  // namespace

Result<std::vector<SessionPiece>> SplitForSession(const Graph& graph, const SessionSizes& sizes) {
  const std::vector<LayerNeeds> layers = NeedsByLayer(graph, sizes);
  const uint64_t kv_per_layer = Bytes(
      2.0 * static_cast<double>(sizes.kv_heads * sizes.head_dim * sizes.context), sizes.kv_bytes);
  std::vector<SessionPiece> pieces;
  for (size_t l = 0; l < layers.size(); ++l) {
    const int32_t layer = static_cast<int32_t>(l);
    SessionPiece alone{layer, layer, layers[l].weight_bytes, kv_per_layer,
                       layers[l].activation_bytes};
    if (alone.bytes() > sizes.limit) {
      return InvalidInput("blk." + std::to_string(layer) + " alone needs " +
                          std::to_string(alone.bytes()) + " bytes (weights " +
                          std::to_string(alone.weight_bytes) + ", KV cache for " +
                          std::to_string(sizes.context) + " positions " +
                          std::to_string(alone.kv_bytes) + ", activations " +
                          std::to_string(alone.activation_bytes) + "), over the session limit of " +
                          std::to_string(sizes.limit) + " bytes: a piece holds at least one layer");
    }
    if (!pieces.empty()) {
      SessionPiece grown = pieces.back();
      grown.last_layer = layer;
      grown.weight_bytes += alone.weight_bytes;
      grown.kv_bytes += alone.kv_bytes;
      grown.activation_bytes = std::max(grown.activation_bytes, alone.activation_bytes);
      if (grown.bytes() <= sizes.limit) {
        pieces.back() = grown;
        continue;
      }
    }
    pieces.push_back(alone);
  }
  return pieces;
}

}  // namespace kite
