// What the graph builders of the architectures share (models/llama.cpp, models/gemma.cpp): the
// Model that makes each phase's graph with a Builder, the weights as graph values, and each
// layer's attention attributes (scale, sliding window, soft-cap) and RoPE.
//
// A Builder is constructed as Builder(model, tokens, context) and offers
//   Result<Graph> Build(const PhaseOptions&) &&;   Result<Graph> BuildBlock(int32_t layer) &&;
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "graph/builder.h"
#include "models/model.h"

namespace kite {

// The graph values of a model's weights, each added once (tied embeddings are one value used
// twice), with their encodings.
class WeightValues {
 public:
  WeightValues(const Model& model, GraphBuilder* builder) : model_(model), b_(*builder) {}

  Result<ValueId> operator()(const std::string& name);
  Result<std::optional<ValueId>> Bias(bool present, const std::string& name);
  // Rows [begin, end) of weight `name` (a fused projection split as a view: no copy).
  Result<ValueId> Rows(const std::string& name, int64_t begin, int64_t end);

 private:
  const Model& model_;
  GraphBuilder& b_;
  std::map<std::string, ValueId> values_;
};

// Layer `layer`'s attention: 1/√head_dim or config.attention_scale, its window when the layer
// slides, the soft-cap.
AttentionAttrs LayerAttention(const ModelConfig& config, int32_t layer);

// Every decoder's end, x [T, hidden] -> logits [T|1, vocab]: the last row only (unless
// phase.all_logits: generation needs no other), output_norm, lm_head (the embedding when tied).
Result<ValueId> DecoderLogits(GraphBuilder& b, WeightValues& w, const ModelConfig& config,
                              ValueId x, int64_t tokens, const PhaseOptions& phase);

// InvalidInput unless tokens >= 1.
Status CheckPhaseTokens(int32_t tokens);

template <typename Builder>
class BuilderModel final : public Model {
 public:
  using Model::Model;

  Result<Graph> BuildGraph(const PhaseOptions& phase) const override {
    KITE_RETURN_IF_ERROR(CheckPhaseTokens(phase.tokens));
    return Builder(*this, phase.tokens, phase.context).Build(phase);
  }

  Result<Graph> BuildBlock(int32_t layer, int32_t tokens) const override {
    KITE_RETURN_IF_ERROR(CheckPhaseTokens(tokens));
    if (layer < 0 || layer >= config().n_layers) {
      return InvalidInput(config().source + ": block " + std::to_string(layer) + ", expected 0.." +
                          std::to_string(config().n_layers - 1));
    }
    return Builder(*this, tokens, /*context=*/0).BuildBlock(layer);
  }
};

template <typename Builder>
std::unique_ptr<Model> CreateBuilderModel(ModelConfig config, WeightStore weights,
                                          Model::FileNames file_names) {
  return std::make_unique<BuilderModel<Builder>>(std::move(config), std::move(weights),
                                                 std::move(file_names));
}

}  // namespace kite
