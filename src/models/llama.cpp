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
//
// Two relatives run on the same builder, each described in its own file: Qwen3 normalizes each
// q and k head before RoPE (models/qwen3.cpp); Phi-3 stores q, k, v as one fused projection and
// gate, up as another, which the graph splits into row views (models/phi3.cpp). A sliding
// window (Mistral, Phi-3) limits what each layer's attention sees.
#include "models/llama.h"

#include <cmath>
#include <optional>
#include <string>

#include "models/builder_model.h"

namespace kite {

namespace {

class LlamaBuilder {
 public:
  LlamaBuilder(const Model& model, int32_t tokens, int32_t context)
      : spec_(model.config()), tokens_(tokens), context_(context), w_(model, &b_) {}

  Result<Graph> Build(const PhaseOptions& phase) && {
    const int64_t T = tokens_;
    const ValueId tokens = KITE_TRY(b_.Input("tokens", DType::kI32, {T}));
    positions_ = KITE_TRY(b_.Input("positions", DType::kI32, {T}));
    ValueId x = KITE_TRY(b_.Embedding("token_embd", KITE_TRY(w_("token_embd.weight")), tokens));
    for (int32_t layer = 0; layer < spec_.n_layers; ++layer) {
      x = KITE_TRY(Block(layer, x));  // [T, hidden]
    }
    KITE_RETURN_IF_ERROR(b_.MarkOutput(KITE_TRY(DecoderLogits(b_, w_, spec_, x, T, phase))));
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
  // The weight of a projection: its own tensor, or its rows of Phi-3's fused one.
  Result<ValueId> Projection(const std::string& p, const char* part) {
    const int64_t q_dim = int64_t{spec_.n_heads} * spec_.head_dim;
    const int64_t kv_dim = int64_t{spec_.n_kv_heads} * spec_.head_dim;
    const std::string name(part);
    if (spec_.family == "phi3") {
      if (name == "attn_q") return w_.Rows(p + "attn_qkv.weight", 0, q_dim);
      if (name == "attn_k") return w_.Rows(p + "attn_qkv.weight", q_dim, q_dim + kv_dim);
      if (name == "attn_v")
        return w_.Rows(p + "attn_qkv.weight", q_dim + kv_dim, q_dim + 2 * kv_dim);
      if (name == "ffn_gate") return w_.Rows(p + "ffn_up.weight", 0, spec_.ffn);
      if (name == "ffn_up") return w_.Rows(p + "ffn_up.weight", spec_.ffn, 2 * int64_t{spec_.ffn});
    }
    return w_(p + name + ".weight");
  }

  // x [T, hidden] -> x [T, hidden]
  Result<ValueId> Block(int32_t layer, ValueId x) {
    const std::string p = "blk." + std::to_string(layer) + ".";
    const int64_t T = tokens_;
    const float eps = spec_.rms_eps;

    ValueId h = KITE_TRY(b_.RmsNorm(p + "attn_norm", x, KITE_TRY(w_(p + "attn_norm.weight")), eps));
    ValueId q = KITE_TRY(b_.MatMul(p + "attn_q", h, KITE_TRY(Projection(p, "attn_q")),
                                   KITE_TRY(w_.Bias(spec_.q_bias, p + "attn_q.bias"))));
    ValueId k = KITE_TRY(b_.MatMul(p + "attn_k", h, KITE_TRY(Projection(p, "attn_k")),
                                   KITE_TRY(w_.Bias(spec_.k_bias, p + "attn_k.bias"))));
    ValueId v = KITE_TRY(b_.MatMul(p + "attn_v", h, KITE_TRY(Projection(p, "attn_v")),
                                   KITE_TRY(w_.Bias(spec_.v_bias, p + "attn_v.bias"))));
    const int64_t Hq = spec_.n_heads, Hkv = spec_.n_kv_heads, D = spec_.head_dim;
    q = KITE_TRY(b_.Reshape(p + "q_heads", q, {T, Hq, D}));   // [T, Hq, D]
    k = KITE_TRY(b_.Reshape(p + "k_heads", k, {T, Hkv, D}));  // [T, Hkv, D]
    v = KITE_TRY(b_.Reshape(p + "v_heads", v, {T, Hkv, D}));  // [T, Hkv, D]
    if (spec_.qk_norm) {  // Qwen3: RMSNorm over each head's D values
      q = KITE_TRY(b_.RmsNorm(p + "attn_q_norm", q, KITE_TRY(w_(p + "attn_q_norm.weight")), eps));
      k = KITE_TRY(b_.RmsNorm(p + "attn_k_norm", k, KITE_TRY(w_(p + "attn_k_norm.weight")), eps));
    }
    const RopeAttrs rope = spec_.RopeOf(layer, context_);
    q = KITE_TRY(b_.Rope(p + "rope_q", q, positions_, rope));
    k = KITE_TRY(b_.Rope(p + "rope_k", k, positions_, rope));
    ValueId a = KITE_TRY(
        b_.Attention(p + "attn", q, k, v, positions_, LayerAttention(spec_, layer)));  // [T, Hq, D]
    a = KITE_TRY(b_.Reshape(p + "attn_flat", a, {T, Hq * D}));                       // [T, Hq * D]
    a = KITE_TRY(b_.MatMul(p + "attn_output", a, KITE_TRY(w_(p + "attn_output.weight")),
                           KITE_TRY(w_.Bias(spec_.o_bias, p + "attn_output.bias"))));
    x = KITE_TRY(b_.Add(p + "attn_residual", x, a));

    h = KITE_TRY(b_.RmsNorm(p + "ffn_norm", x, KITE_TRY(w_(p + "ffn_norm.weight")), eps));
    ValueId gate = KITE_TRY(b_.MatMul(p + "ffn_gate", h, KITE_TRY(Projection(p, "ffn_gate")),
                                      KITE_TRY(w_.Bias(spec_.mlp_bias, p + "ffn_gate.bias"))));
    ValueId up = KITE_TRY(b_.MatMul(p + "ffn_up", h, KITE_TRY(Projection(p, "ffn_up")),
                                    KITE_TRY(w_.Bias(spec_.mlp_bias, p + "ffn_up.bias"))));
    ValueId f = KITE_TRY(b_.SwiGlu(p + "ffn_swiglu", gate, up));  // [T, ffn]
    f = KITE_TRY(b_.MatMul(p + "ffn_down", f, KITE_TRY(w_(p + "ffn_down.weight")),
                           KITE_TRY(w_.Bias(spec_.mlp_bias, p + "ffn_down.bias"))));
    return b_.Add(p + "ffn_residual", x, f);
  }

  const ModelConfig& spec_;
  const int32_t tokens_;
  const int32_t context_;
  GraphBuilder b_;
  WeightValues w_;
  ValueId positions_;
};

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
    if (spec.qk_norm) {
      add(blk + "attn_q_norm.weight", {spec.head_dim});
      add(blk + "attn_k_norm.weight", {spec.head_dim});
    }
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

std::unique_ptr<Model> CreateLlamaFamilyModel(ModelConfig config, WeightStore weights,
                                              Model::FileNames file_names) {
  return CreateBuilderModel<LlamaBuilder>(std::move(config), std::move(weights),
                                          std::move(file_names));
}

const HfNamePart kLlamaHfParts[9] = {
    {"attn_norm.weight", "input_layernorm.weight"},
    {"attn_q.", "self_attn.q_proj."},
    {"attn_k.", "self_attn.k_proj."},
    {"attn_v.", "self_attn.v_proj."},
    {"attn_output.", "self_attn.o_proj."},
    {"ffn_norm.weight", "post_attention_layernorm.weight"},
    {"ffn_gate.", "mlp.gate_proj."},
    {"ffn_up.", "mlp.up_proj."},
    {"ffn_down.", "mlp.down_proj."},
};

namespace {

// GGUF "llama" (Llama, Mistral, SmolLM) or "qwen2".
std::string LlamaGgufArch(const ModelConfig& config) {
  return config.architecture == "Qwen2ForCausalLM" || config.architecture == "qwen2" ? "qwen2"
                                                                                     : "llama";
}

// Mistral's window as llama.cpp's key (its "llama" arch reads it since Mistral v0.1).
void LlamaToGguf(const ModelConfig& config, const std::string& arch, GgufWriter* writer) {
  if (config.sliding_window > 0) {
    writer->SetUint32(arch + ".attention.sliding_window",
                      static_cast<uint32_t>(config.sliding_window));
  }
}

}  // namespace

const Architecture kLlamaArchitecture = {.family = "llama",
                                         .tensors = &LlamaTensors,
                                         .create = &CreateLlamaFamilyModel,
                                         .hf_parts = {},
                                         .gguf_arch = &LlamaGgufArch,
                                         .to_gguf = &LlamaToGguf};

}  // namespace kite
