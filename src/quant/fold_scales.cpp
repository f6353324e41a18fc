#include "quant/fold_scales.h"

#include <cstring>
#include <utility>

#include "tensor/dequantize.h"
#include "models/architectures.h"

namespace kite {

Result<std::vector<float>> WeightFloats(const TensorView& weight) {
  const uint64_t n = KITE_TRY(ElementCount(weight.shape));
  std::vector<float> values(n);
  Status read = Dequantize(weight.dtype, weight.data, values.data(), static_cast<int64_t>(n));
  if (!read) {
    return std::unexpected(std::move(read.error()).WithContext("weight '" + weight.name + "'"));
  }
  return values;
}

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

Result<std::unique_ptr<Model>> WithWeights(const Model& model, const FoldedWeights& weights) {
  ModelConfig config = model.config();
  WeightStore store;
  for (const auto& [name, view] : model.weights().weights()) {
    if (!weights.contains(name)) store.Add(view);
  }
  for (const auto& [name, values] : weights) {
    const bool untie = name == "output.weight" && config.tied_embeddings;
    const TensorView* old = KITE_TRY(model.Weight(untie ? "token_embd.weight" : name));
    int64_t n = 1;
    for (int64_t d : old->shape) n *= d;
    if (static_cast<int64_t>(values.size()) != n) {
      return InvalidInput("weight '" + name + "': " + std::to_string(values.size()) +
                          " values, expected " + std::to_string(n) + " " + ShapeString(old->shape));
    }
    AlignedBuffer buffer = KITE_TRY(AlignedBuffer::Allocate(n * sizeof(float)));
    std::memcpy(buffer.data(), values.data(), n * sizeof(float));
    KITE_TRY(store.AddBuffer(name, DType::kF32, old->shape, std::move(buffer)));
    if (untie) config.tied_embeddings = false;
  }
  const Architecture* architecture = KITE_TRY(FindArchitecture(config));
  return architecture->create(std::move(config), std::move(store),
                              [&model](const std::string& name) { return model.FileName(name); });
}

}  // namespace kite
