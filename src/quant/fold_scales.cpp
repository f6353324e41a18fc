#include "quant/fold_scales.h"

#include <utility>

namespace kite {

Result<FoldedWeights> FoldScales(const Model& model, std::vector<ChannelScale> scales) {
  // A decode step's graph has every norm and matmul the scales can name.
  const Graph graph = KITE_TRY(model.BuildGraph({.tokens = 1}));
  WeightStore store;  // the pass's new weights, and nothing else
  FoldChannelScale pass(&store, std::move(scales));
  KITE_TRY(pass.Run(graph));
  FoldedWeights folded;
  for (const auto& [name, view] : store.weights()) {
    const float* data = static_cast<const float*>(view.data);
    folded[name] = std::vector<float>(data, data + view.bytes / sizeof(float));
  }
  return folded;
}

}  // namespace kite
