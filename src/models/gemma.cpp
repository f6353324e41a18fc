// Gemma 2 and Gemma 3 (text), as their technical reports and transformers' Gemma2/Gemma3
// describe them:
//
//   x = embed(tokens) · √hidden
//   for each layer:
//     h = rms_norm(x) · (1 + attn_norm)
//     q, k, v = h·Wqᵀ, h·Wkᵀ, h·Wvᵀ                         per head
//     q, k = rms_norm(q) · (1 + q_norm), rms_norm(k) · (1 + k_norm)   Gemma 3 only
//     q, k = rope(q), rope(k)        Gemma 3: sliding layers base 10000, global ones rope_theta
//     a = attention(q, k, v) with scale query_pre_attn_scalar^-½, scores soft-capped
//         (Gemma 2: 50·tanh(s/50)), sliding layers seeing the last sliding_window positions
//         (Gemma 2: every other layer; Gemma 3: five of every six)
//     x = x + rms_norm(a·Woᵀ) · (1 + post_attention_norm)
//     h = rms_norm(x) · (1 + ffn_norm)
//     x = x + rms_norm((gelu_tanh(h·Wgateᵀ) ⊙ h·Wupᵀ)·Wdownᵀ) · (1 + post_ffw_norm)
//   logits = rms_norm(x) · (1 + output_norm) · Wembᵀ, soft-capped (Gemma 2: 30·tanh(l/30))
//
// The (1 + w) of every norm is folded into the weights when loading (GGUF files store 1 + w, as
// llama.cpp's converter writes them), so the graph's RmsNorm multiplies by its weight as usual.
// GGUF (llama.cpp's "gemma2" / "gemma3"): blk.N.post_attention_norm, post_ffw_norm, attn_q_norm,
// attn_k_norm; gemma2.attn_logit_softcapping, final_logit_softcapping; {arch}.attention.
// sliding_window. llama.cpp fixes the layer patterns (2 and 6), Gemma 3's local base (10000) and
// the attention scale (1/√head_dim, 1/√(hidden/heads) for the 27B models); Kite also writes the
// scale as {arch}.attention.scale, which it prefers when present.
#include "models/gemma.h"

#include <cmath>
#include <optional>
#include <string>

#include "models/builder_model.h"
#include "models/gguf_keys.h"

namespace kite {

namespace {

class GemmaBuilder {
 public:
  GemmaBuilder(const Model& model, int32_t tokens, int32_t context)
      : spec_(model.config()), tokens_(tokens), context_(context), w_(model, &b_) {}

  Result<Graph> Build(const PhaseOptions& phase) && {
    const int64_t T = tokens_;
    const ValueId tokens = KITE_TRY(b_.Input("tokens", DType::kI32, {T}));
    positions_ = KITE_TRY(b_.Input("positions", DType::kI32, {T}));
    ValueId x = KITE_TRY(b_.Embedding("token_embd", KITE_TRY(w_("token_embd.weight")), tokens,
                                      spec_.embedding_scale));
    for (int32_t layer = 0; layer < spec_.n_layers; ++layer) {
      x = KITE_TRY(Block(layer, x));  // [T, hidden]
    }
    ValueId logits = KITE_TRY(DecoderLogits(b_, w_, spec_, x, T, phase));  // [T|1, vocab]
    if (spec_.final_softcap > 0.0f) {
      logits = KITE_TRY(b_.Softcap("output_softcap", logits, spec_.final_softcap));
    }
    KITE_RETURN_IF_ERROR(b_.MarkOutput(logits));
    return std::move(b_).Finish();
  }

  Result<Graph> BuildBlock(int32_t layer) && {
    const ValueId x = KITE_TRY(b_.Input("x", DType::kF32, {tokens_, spec_.hidden}));
    positions_ = KITE_TRY(b_.Input("positions", DType::kI32, {tokens_}));
    KITE_RETURN_IF_ERROR(b_.MarkOutput(KITE_TRY(Block(layer, x))));
    return std::move(b_).Finish();
  }

 private:
  Result<ValueId> Norm(const std::string& name, ValueId x) {
    return b_.RmsNorm(name, x, KITE_TRY(w_(name + ".weight")), spec_.rms_eps);
  }
  Result<ValueId> Project(const std::string& name, ValueId x) {
    return b_.MatMul(name, x, KITE_TRY(w_(name + ".weight")));
  }

  // x [T, hidden] -> x [T, hidden]
  Result<ValueId> Block(int32_t layer, ValueId x) {
    const std::string p = "blk." + std::to_string(layer) + ".";
    const int64_t T = tokens_;
    const int64_t Hq = spec_.n_heads, Hkv = spec_.n_kv_heads, D = spec_.head_dim;

    const ValueId h = KITE_TRY(Norm(p + "attn_norm", x));
    ValueId q = KITE_TRY(b_.Reshape(p + "q_heads", KITE_TRY(Project(p + "attn_q", h)), {T, Hq, D}));
    ValueId k =
        KITE_TRY(b_.Reshape(p + "k_heads", KITE_TRY(Project(p + "attn_k", h)), {T, Hkv, D}));
    const ValueId v =
        KITE_TRY(b_.Reshape(p + "v_heads", KITE_TRY(Project(p + "attn_v", h)), {T, Hkv, D}));
    if (spec_.qk_norm) {  // Gemma 3
      q = KITE_TRY(Norm(p + "attn_q_norm", q));
      k = KITE_TRY(Norm(p + "attn_k_norm", k));
    }
    const RopeAttrs rope = spec_.RopeOf(layer, context_);
    q = KITE_TRY(b_.Rope(p + "rope_q", q, positions_, rope));
    k = KITE_TRY(b_.Rope(p + "rope_k", k, positions_, rope));
    ValueId a = KITE_TRY(
        b_.Attention(p + "attn", q, k, v, positions_, LayerAttention(spec_, layer)));  // [T, Hq, D]
    a = KITE_TRY(b_.Reshape(p + "attn_flat", a, {T, Hq * D}));
    a = KITE_TRY(Norm(p + "post_attention_norm", KITE_TRY(Project(p + "attn_output", a))));
    x = KITE_TRY(b_.Add(p + "attn_residual", x, a));

    const ValueId f_in = KITE_TRY(Norm(p + "ffn_norm", x));
    ValueId f = KITE_TRY(b_.GeGlu(p + "ffn_geglu", KITE_TRY(Project(p + "ffn_gate", f_in)),
                                  KITE_TRY(Project(p + "ffn_up", f_in))));  // [T, ffn]
    f = KITE_TRY(Norm(p + "post_ffw_norm", KITE_TRY(Project(p + "ffn_down", f))));
    return b_.Add(p + "ffn_residual", x, f);
  }

  const ModelConfig& spec_;
  const int32_t tokens_;
  const int32_t context_;
  GraphBuilder b_;
  WeightValues w_;
  ValueId positions_;
};

std::vector<ExpectedTensor> GemmaTensors(const ModelConfig& spec) {
  const int64_t hidden = spec.hidden;
  const int64_t q_dim = int64_t{spec.n_heads} * spec.head_dim;
  const int64_t kv_dim = int64_t{spec.n_kv_heads} * spec.head_dim;
  std::vector<ExpectedTensor> tensors;
  auto add = [&](std::string name, std::vector<int64_t> shape) {
    tensors.push_back({std::move(name), std::move(shape)});
  };
  add("token_embd.weight", {spec.vocab, hidden});
  for (int32_t layer = 0; layer < spec.n_layers; ++layer) {
    const std::string blk = "blk." + std::to_string(layer) + ".";
    add(blk + "attn_norm.weight", {hidden});
    add(blk + "attn_q.weight", {q_dim, hidden});
    add(blk + "attn_k.weight", {kv_dim, hidden});
    add(blk + "attn_v.weight", {kv_dim, hidden});
    if (spec.qk_norm) {
      add(blk + "attn_q_norm.weight", {spec.head_dim});
      add(blk + "attn_k_norm.weight", {spec.head_dim});
    }
    add(blk + "attn_output.weight", {hidden, q_dim});
    add(blk + "post_attention_norm.weight", {hidden});
    add(blk + "ffn_norm.weight", {hidden});
    add(blk + "ffn_gate.weight", {spec.ffn, hidden});
    add(blk + "ffn_up.weight", {spec.ffn, hidden});
    add(blk + "ffn_down.weight", {hidden, spec.ffn});
    add(blk + "post_ffw_norm.weight", {hidden});
  }
  add("output_norm.weight", {hidden});
  if (!spec.tied_embeddings) add("output.weight", {spec.vocab, hidden});
  return tensors;
}

const HfNamePart kGemmaHfParts[] = {
    {"post_attention_norm.weight", "post_attention_layernorm.weight"},
    {"ffn_norm.weight", "pre_feedforward_layernorm.weight"},
    {"post_ffw_norm.weight", "post_feedforward_layernorm.weight"},
    {"attn_q_norm.", "self_attn.q_norm."},
    {"attn_k_norm.", "self_attn.k_norm."},
};

bool IsGemma3(const ModelConfig& config) {
  return config.architecture == "Gemma3ForCausalLM" || config.architecture == "gemma3";
}

// What every Gemma shares; `pattern`: every pattern-th layer is global.
void SetGemmaCommon(int32_t pattern, ModelConfig* config) {
  config->embedding_scale = std::sqrt(static_cast<float>(config->hidden));
  config->sliding_window_pattern = pattern;
  config->qk_norm = IsGemma3(*config);
  if (config->qk_norm) {  // the local layers' RoPE: base 10000, unscaled
    RopeAttrs local = config->rope;
    local.theta = 10000.0f;
    local.scaling = RopeScaling::kNone;
    local.factor = 1.0f;
    config->rope_sliding = local;
  }
}

// The period of `layer_types` ("sliding_attention" / "full_attention"): N when exactly every
// N-th layer is full.
Result<int32_t> LayerPattern(const HfConfig& hf) {
  const auto& types = hf.layer_types;
  size_t period = 0;
  for (size_t i = 0; i < types.size() && period == 0; ++i) {
    if (types[i] == "full_attention") period = i + 1;
  }
  for (size_t i = 0; i < types.size(); ++i) {
    const bool full = period > 0 && (i + 1) % period == 0;
    if (types[i] != (full ? "full_attention" : "sliding_attention")) {
      return Unsupported(hf.path + ": layer_types[" + std::to_string(i) + "] is '" + types[i] +
                         "'; Kite runs sliding layers with every N-th layer full");
    }
  }
  return static_cast<int32_t>(period);  // 0: every layer slides
}

Status GemmaFromHf(const HfConfig& hf, ModelConfig* config) {
  const bool gemma3 = IsGemma3(*config);
  int32_t pattern = gemma3 ? static_cast<int32_t>(hf.sliding_window_pattern.value_or(6)) : 2;
  if (!hf.layer_types.empty()) pattern = KITE_TRY(LayerPattern(hf));
  SetGemmaCommon(pattern, config);
  if (gemma3 && hf.rope_local_base_freq) {
    config->rope_sliding->theta = static_cast<float>(*hf.rope_local_base_freq);
  }
  config->attention_scale = static_cast<float>(
      1.0 / std::sqrt(hf.query_pre_attn_scalar.value_or(static_cast<double>(hf.head_dim))));
  config->attn_softcap = static_cast<float>(hf.attn_logit_softcapping.value_or(0.0));
  config->final_softcap = static_cast<float>(hf.final_logit_softcapping.value_or(0.0));
  return Ok();
}

Status GemmaFromGguf(const GgufFile& gguf, const std::string& arch, ModelConfig* config) {
  const GgufKeys keys(gguf, arch);
  const bool gemma3 = arch == "gemma3";
  if (!gemma3 && config->sliding_window == 0) config->sliding_window = 4096;  // llama.cpp's
  SetGemmaCommon(gemma3 ? 6 : 2, config);
  // llama.cpp: 1/√(hidden/heads) for the 27B models (46 and 62 layers), else 1/√head_dim.
  const bool is_27b = config->n_layers == (gemma3 ? 62 : 46);
  const float llama_cpp_scale =
      1.0f /
      std::sqrt(static_cast<float>(is_27b ? config->hidden / config->n_heads : config->head_dim));
  config->attention_scale = KITE_TRY(keys.Float("attention.scale", llama_cpp_scale));
  if (!gemma3) {
    config->attn_softcap = KITE_TRY(keys.Float("attn_logit_softcapping", 50.0f));
    config->final_softcap = KITE_TRY(keys.Float("final_logit_softcapping", 30.0f));
  }
  return Ok();
}

std::string GemmaGgufArch(const ModelConfig& config) {
  return IsGemma3(config) ? "gemma3" : "gemma2";
}

void GemmaToGguf(const ModelConfig& config, const std::string& arch, GgufWriter* writer) {
  writer->SetUint32(arch + ".attention.sliding_window",
                    static_cast<uint32_t>(config.sliding_window));
  writer->SetFloat32(arch + ".attention.scale", config.attention_scale);
  if (config.attn_softcap > 0.0f) {
    writer->SetFloat32(arch + ".attn_logit_softcapping", config.attn_softcap);
  }
  if (config.final_softcap > 0.0f) {
    writer->SetFloat32(arch + ".final_logit_softcapping", config.final_softcap);
  }
}

}  // namespace

const Architecture kGemmaArchitecture = {.family = "gemma",
                                         .tensors = &GemmaTensors,
                                         .create = &CreateBuilderModel<GemmaBuilder>,
                                         .hf_parts = kGemmaHfParts,
                                         .hf_norm_plus_one = true,
                                         .from_hf = &GemmaFromHf,
                                         .from_gguf = &GemmaFromGguf,
                                         .gguf_arch = &GemmaGgufArch,
                                         .to_gguf = &GemmaToGguf};

}  // namespace kite
