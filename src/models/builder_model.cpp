#include "models/builder_model.h"

#include <cmath>

namespace kite {

Result<ValueId> WeightValues::operator()(const std::string& name) {
  if (auto it = values_.find(name); it != values_.end()) return it->second;
  const TensorView* view = KITE_TRY(model_.Weight(name));
  const QuantEncoding* encoding = model_.WeightEncoding(name);
  const ValueId id =
      KITE_TRY(b_.Weight(*view, encoding ? std::optional<QuantEncoding>(*encoding) : std::nullopt));
  values_.emplace(name, id);
  return id;
}

Result<std::optional<ValueId>> WeightValues::Bias(bool present, const std::string& name) {
  if (!present) return std::optional<ValueId>();
  return std::optional<ValueId>(KITE_TRY((*this)(name)));
}

Result<ValueId> WeightValues::Rows(const std::string& name, int64_t begin, int64_t end) {
  const std::string view = name + "[" + std::to_string(begin) + ":" + std::to_string(end) + "]";
  if (auto it = values_.find(view); it != values_.end()) return it->second;
  const ValueId rows = KITE_TRY(b_.Slice(view, KITE_TRY((*this)(name)), 0, begin, end));
  values_.emplace(view, rows);
  return rows;
}

AttentionAttrs LayerAttention(const ModelConfig& config, int32_t layer) {
  const float scale = config.attention_scale > 0.0f
                          ? config.attention_scale
                          : 1.0f / std::sqrt(static_cast<float>(config.head_dim));
  return {.layer = layer,
          .scale = scale,
          .window = config.IsSlidingLayer(layer) ? config.sliding_window : 0,
          .softcap = config.attn_softcap};
}

Result<ValueId> DecoderLogits(GraphBuilder& b, WeightValues& w, const ModelConfig& config,
                              ValueId x, int64_t tokens, const PhaseOptions& phase) {
  if (!phase.all_logits && tokens > 1)
    x = KITE_TRY(b.Slice("last_token", x, 0, tokens - 1, tokens));
  x = KITE_TRY(b.RmsNorm("output_norm", x, KITE_TRY(w("output_norm.weight")), config.rms_eps));
  const char* lm_head = config.tied_embeddings ? "token_embd.weight" : "output.weight";
  return b.MatMul("output", x, KITE_TRY(w(lm_head)));
}

Status CheckPhaseTokens(int32_t tokens) {
  if (tokens < 1) {
    return InvalidInput("graph phase of " + std::to_string(tokens) + " tokens, expected >= 1");
  }
  return Ok();
}

}  // namespace kite
