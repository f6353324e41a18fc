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
#include "models/llama.h"

namespace kite {

namespace {

class LlamaBuilder {
 public:
  LlamaBuilder(const Model& model, int32_t tokens)
      : model_(model), spec_(model.config()), tokens_(tokens) {}

  Result<Graph> Build(const PhaseOptions& phase) && {
    const int64_t T = tokens_;
    const ValueId tokens = KITE_TRY(b_.Input("tokens", DType::kI32, {T}));
    positions_ = KITE_TRY(b_.Input("positions", DType::kI32, {T}));
    ValueId x = KITE_TRY(b_.Embedding("token_embd", KITE_TRY(W("token_embd.weight")), tokens));
    for (int32_t layer = 0; layer < spec_.n_layers; ++layer) {
      x = KITE_TRY(Block(layer, x));  // [T, hidden]
    }
    // Generation needs only the last token's logits: norm and lm_head run on one row.
    if (!phase.all_logits && T > 1) x = KITE_TRY(b_.Slice("last_token", x, 0, T - 1, T));
    x = KITE_TRY(b_.RmsNorm("output_norm", x, KITE_TRY(W("output_norm.weight")), spec_.rms_eps));
    const char* lm_head = spec_.tied_embeddings ? "token_embd.weight" : "output.weight";
    const ValueId logits = KITE_TRY(b_.MatMul("output", x, KITE_TRY(W(lm_head))));  // [T|1, vocab]
    KITE_RETURN_IF_ERROR(b_.MarkOutput(logits));
    return std::move(b_).Finish();
  }

  Result<Graph> BuildBlock(int32_t layer) && {
    const int64_t T = tokens_;
    const ValueId x = KITE_TRY(b_.Input("x", DType::kF32, {T, spec_.hidden}));
    positions_ = KITE_TRY(b_.Input("positions", DType::kI32, {T}));
    KITE_RETURN_IF_ERROR(b_.MarkOutput(KITE_TRY(Block(layer, x))));
    return std::move(b_).Finish();
  }

 private:
  // A weight as a graph value, each added once (tied embeddings are one value used twice).
  Result<ValueId> W(const std::string& name) {
    if (auto it = weights_.find(name); it != weights_.end()) return it->second;
    const TensorView* view = KITE_TRY(model_.Weight(name));
    const QuantEncoding* encoding = model_.WeightEncoding(name);
    const ValueId id = KITE_TRY(b_.Weight(
        *view, encoding ? std::optional<QuantEncoding>(*encoding) : std::nullopt));
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
    const int64_t T = tokens_;
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
    q = KITE_TRY(b_.Rope(p + "rope_q", q, positions_, spec_.rope));
    k = KITE_TRY(b_.Rope(p + "rope_k", k, positions_, spec_.rope));
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

  const Model& model_;
  const ModelConfig& spec_;
  const int32_t tokens_;
  GraphBuilder b_;
  ValueId positions_;
  std::map<std::string, ValueId> weights_;
};

Status CheckTokens(int32_t tokens) {
  if (tokens < 1) {
    return InvalidInput("graph phase of " + std::to_string(tokens) + " tokens, expected >= 1");
  }
  return Ok();
}

class LlamaModel final : public Model {
 public:
  using Model::Model;

  Result<Graph> BuildGraph(const PhaseOptions& phase) const override {
    KITE_RETURN_IF_ERROR(CheckTokens(phase.tokens));
    return LlamaBuilder(*this, phase.tokens).Build(phase);
  }

  Result<Graph> BuildBlock(int32_t layer, int32_t tokens) const override {
    KITE_RETURN_IF_ERROR(CheckTokens(tokens));
    if (layer < 0 || layer >= config().n_layers) {
      return InvalidInput(config().source + ": block " + std::to_string(layer) +
                          ", expected 0.." + std::to_string(config().n_layers - 1));
    }
    return LlamaBuilder(*this, tokens).BuildBlock(layer);
  }
};

std::unique_ptr<Model> CreateLlama(ModelConfig config, WeightStore weights,
                                   Model::FileNames file_names) {
  return std::make_unique<LlamaModel>(std::move(config), std::move(weights),
                                      std::move(file_names));
}

}  // namespace

std::vector<ExpectedTensor> LlamaTensors(const ModelConfig& spec) {
  const int64_t hidden = spec.hidden;
  const int64_t q_dim = static_cast<int64_t>(spec.n_heads) * spec.head_dim;
  const int64_t kv_dim = static_cast<int64_t>(spec.n_kv_heads) * spec.head_dim;
  const int64_t ffn = spec.ffn;
  std::vector<ExpectedTensor> tensors;
  auto add = [&](std::string name, std::vector<int64_t> shape) {
    tensors.push_back({std::move(name), std::move(shape)});
  };
  add("token_embd.weight", {spec.vocab, hidden});
  for (int32_t layer = 0; layer < spec.n_layers; ++layer) {
    const std::string blk = "blk." + std::to_string(layer) + ".";
    add(blk + "attn_norm.weight", {hidden});
    add(blk + "attn_q.weight", {q_dim, hidden});
    if (spec.q_bias) add(blk + "attn_q.bias", {q_dim});
    add(blk + "attn_k.weight", {kv_dim, hidden});
    if (spec.k_bias) add(blk + "attn_k.bias", {kv_dim});
    add(blk + "attn_v.weight", {kv_dim, hidden});
    if (spec.v_bias) add(blk + "attn_v.bias", {kv_dim});
    add(blk + "attn_output.weight", {hidden, q_dim});
    if (spec.o_bias) add(blk + "attn_output.bias", {hidden});
    add(blk + "ffn_norm.weight", {hidden});
    add(blk + "ffn_gate.weight", {ffn, hidden});
    add(blk + "ffn_up.weight", {ffn, hidden});
    add(blk + "ffn_down.weight", {hidden, ffn});
    if (spec.mlp_bias) {
      add(blk + "ffn_gate.bias", {ffn});
      add(blk + "ffn_up.bias", {ffn});
      add(blk + "ffn_down.bias", {hidden});
    }
  }
  add("output_norm.weight", {hidden});
  if (!spec.tied_embeddings) add("output.weight", {spec.vocab, hidden});
  return tensors;
}

const Architecture kLlamaArchitecture = {
    .family = "llama", .tensors = &LlamaTensors, .create = &CreateLlama};

}  // namespace kite
