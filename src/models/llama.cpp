// The Llama family's decoder (Llama 2/3, Mistral, Qwen2, SmolLM), as the Llama paper and the
// transformers implementation describe it:
//
//   x = embed(tokens)
//   for each layer:
//     h = rms_norm(x) · attn_norm
//     q, k, v = h·Wqᵀ (+bq), h·Wkᵀ (+bk), h·Wvᵀ (+bv)        per head, then rotated (RoPE)
//     x = x + attention(q, k, v over the KV cache)·Woᵀ (+bo)   causal, grouped-query
//     h = rms_norm(x) · ffn_norm
//     x = x + (silu(h·Wgateᵀ) ⊙ h·Wupᵀ)·Wdownᵀ                 SwiGLU
//   logits = rms_norm(x) · output_norm · Wlm_headᵀ
#include <cmath>
#include <map>
#include <optional>
#include <string>

#include "graph/builder.h"
#include "models/build_graph.h"

namespace kite {

namespace {

RopeAttrs RopeFor(const RopeSpec& rope) {
  RopeAttrs attrs;
  attrs.mode = rope.mode == RopeSpec::Mode::kNeox ? RopeMode::kNeox : RopeMode::kInterleaved;
  attrs.theta = rope.theta;
  attrs.rotary_dim = rope.rotary_dim;
  switch (rope.scaling) {
    case RopeSpec::Scaling::kNone:
      attrs.scaling = RopeScaling::kNone;
      break;
    case RopeSpec::Scaling::kLinear:
      attrs.scaling = RopeScaling::kLinear;
      break;
    case RopeSpec::Scaling::kLlama3:
      attrs.scaling = RopeScaling::kLlama3;
      break;
  }
  attrs.factor = rope.factor;
  attrs.low_freq_factor = rope.low_freq_factor;
  attrs.high_freq_factor = rope.high_freq_factor;
  attrs.original_max_position = rope.original_max_position;
  return attrs;
}

class LlamaBuilder {
 public:
  LlamaBuilder(const ModelSpec& spec, const PhaseOptions& phase)
      : spec_(spec), phase_(phase), rope_(RopeFor(spec.rope)) {}

  Result<Graph> Build() && {
    const int64_t T = phase_.tokens;
    const ValueId tokens = KITE_TRY(b_.Input("tokens", DType::kI32, {T}));
    positions_ = KITE_TRY(b_.Input("positions", DType::kI32, {T}));
    ValueId x = KITE_TRY(b_.Embedding("token_embd", KITE_TRY(W("token_embd.weight")), tokens));
    for (int32_t layer = 0; layer < spec_.n_layers; ++layer) {
      x = KITE_TRY(Block(layer, x));  // [T, hidden]
    }
    // Generation needs only the last token's logits: norm and lm_head run on one row.
    if (!phase_.all_logits && T > 1) x = KITE_TRY(b_.Slice("last_token", x, 0, T - 1, T));
    x = KITE_TRY(b_.RmsNorm("output_norm", x, KITE_TRY(W("output_norm.weight")), spec_.rms_eps));
    const char* lm_head = spec_.tied_embeddings ? "token_embd.weight" : "output.weight";
    const ValueId logits = KITE_TRY(b_.MatMul("output", x, KITE_TRY(W(lm_head))));  // [T|1, vocab]
    KITE_RETURN_IF_ERROR(b_.MarkOutput(logits));
    return std::move(b_).Finish();
  }

 private:
  // A weight as a graph value, each added once (tied embeddings are one value used twice).
  Result<ValueId> W(const std::string& name) {
    if (auto it = weights_.find(name); it != weights_.end()) return it->second;
    const TensorView* view = KITE_TRY(spec_.Weight(name));
    const ValueId id = KITE_TRY(b_.Weight(*view));
    weights_.emplace(name, id);
    return id;
  }
  Result<std::optional<ValueId>> Bias(bool present, const std::string& name) {
    if (!present) return std::optional<ValueId>();
    return std::optional<ValueId>(KITE_TRY(W(name)));
  }

  // x [T, hidden] -> x [T, hidden]
  Result<ValueId> Block(int32_t layer, ValueId x) {
    const std::string p = "blk." + std::to_string(layer) + ".";
    const int64_t T = phase_.tokens;
    const float eps = spec_.rms_eps;

    ValueId h = KITE_TRY(b_.RmsNorm(p + "attn_norm", x, KITE_TRY(W(p + "attn_norm.weight")), eps));
    ValueId q = KITE_TRY(b_.MatMul(p + "attn_q", h, KITE_TRY(W(p + "attn_q.weight")),
                                   KITE_TRY(Bias(spec_.q_bias, p + "attn_q.bias"))));
    ValueId k = KITE_TRY(b_.MatMul(p + "attn_k", h, KITE_TRY(W(p + "attn_k.weight")),
                                   KITE_TRY(Bias(spec_.k_bias, p + "attn_k.bias"))));
    ValueId v = KITE_TRY(b_.MatMul(p + "attn_v", h, KITE_TRY(W(p + "attn_v.weight")),
                                   KITE_TRY(Bias(spec_.v_bias, p + "attn_v.bias"))));
    const int64_t Hq = spec_.n_heads, Hkv = spec_.n_kv_heads, D = spec_.head_dim;
    q = KITE_TRY(b_.Reshape(p + "q_heads", q, {T, Hq, D}));   // [T, Hq, D]
    k = KITE_TRY(b_.Reshape(p + "k_heads", k, {T, Hkv, D}));  // [T, Hkv, D]
    v = KITE_TRY(b_.Reshape(p + "v_heads", v, {T, Hkv, D}));  // [T, Hkv, D]
    q = KITE_TRY(b_.Rope(p + "rope_q", q, positions_, rope_));
    k = KITE_TRY(b_.Rope(p + "rope_k", k, positions_, rope_));
    const AttentionAttrs attention{.layer = layer,
                                   .scale = 1.0f / std::sqrt(static_cast<float>(spec_.head_dim))};
    ValueId a = KITE_TRY(b_.Attention(p + "attn", q, k, v, positions_, attention));  // [T, Hq, D]
    a = KITE_TRY(b_.Reshape(p + "attn_flat", a, {T, Hq * D}));                       // [T, Hq * D]
    a = KITE_TRY(b_.MatMul(p + "attn_output", a, KITE_TRY(W(p + "attn_output.weight")),
                           KITE_TRY(Bias(spec_.o_bias, p + "attn_output.bias"))));
    x = KITE_TRY(b_.Add(p + "attn_residual", x, a));

    h = KITE_TRY(b_.RmsNorm(p + "ffn_norm", x, KITE_TRY(W(p + "ffn_norm.weight")), eps));
    ValueId gate = KITE_TRY(b_.MatMul(p + "ffn_gate", h, KITE_TRY(W(p + "ffn_gate.weight")),
                                      KITE_TRY(Bias(spec_.mlp_bias, p + "ffn_gate.bias"))));
    ValueId up = KITE_TRY(b_.MatMul(p + "ffn_up", h, KITE_TRY(W(p + "ffn_up.weight")),
                                    KITE_TRY(Bias(spec_.mlp_bias, p + "ffn_up.bias"))));
    ValueId f = KITE_TRY(b_.SwiGlu(p + "ffn_swiglu", gate, up));  // [T, ffn]
    f = KITE_TRY(b_.MatMul(p + "ffn_down", f, KITE_TRY(W(p + "ffn_down.weight")),
                           KITE_TRY(Bias(spec_.mlp_bias, p + "ffn_down.bias"))));
    return b_.Add(p + "ffn_residual", x, f);
  }

  const ModelSpec& spec_;
  const PhaseOptions& phase_;
  const RopeAttrs rope_;
  GraphBuilder b_;
  ValueId positions_;
  std::map<std::string, ValueId> weights_;
};

}  // namespace

Result<Graph> BuildLlamaGraph(const ModelSpec& spec, const PhaseOptions& phase) {
  if (phase.tokens < 1) {
    return InvalidInput("graph phase of " + std::to_string(phase.tokens) +
                        " tokens, expected >= 1");
  }
  return LlamaBuilder(spec, phase).Build();
}

}  // namespace kite
