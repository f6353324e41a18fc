// Phi-3 (mini, 3.5-mini, Phi-4-mini), as the Phi-3 technical report and transformers' Phi3
// describe it: the Llama decoder with
//   - q, k and v in one projection [q_dim + 2 kv_dim, hidden] (self_attn.qkv_proj; GGUF
//     blk.N.attn_qkv.weight) and gate and up in another [2 ffn, hidden] (mlp.gate_up_proj, gate
//     first; GGUF stores it as blk.N.ffn_up.weight). The graph splits both into row views of the
//     stored tensor (no copy), so the Llama builder runs it unchanged;
//   - partial rotary embedding: the first partial_rotary_factor · head_dim dims of each head
//     rotate (Phi-4-mini: 96 of 128), the rest pass through;
//   - LongRoPE (rope_scaling type "longrope", formerly "su"): each rotary pair's frequency is
//     divided by a factor, the short factors up to original_max_position_embeddings and the long
//     ones past it, and cos/sin are scaled by √(1 + ln(s) / ln(original)), s = max_position /
//     original. Kite takes the long factors when a run's context exceeds the original one (as
//     llama.cpp does: chosen once per context, not per step as transformers' dynamic update);
//   - a sliding window on every layer when the config gives one (Phi-3-mini: 2047).
// GGUF (llama.cpp's "phi3"): rope_factors_long.weight / rope_factors_short.weight [rotary / 2],
// phi3.rope.scaling.attn_factor, phi3.rope.scaling.original_context_length.
#include "models/phi3.h"

#include <cmath>

#include "models/gguf_keys.h"
#include "models/llama.h"

namespace kite {

namespace {

std::vector<ExpectedTensor> Phi3Tensors(const ModelConfig& spec) {
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
    add(blk + "attn_qkv.weight", {q_dim + 2 * kv_dim, hidden});
    add(blk + "attn_output.weight", {hidden, q_dim});
    add(blk + "ffn_norm.weight", {hidden});
    add(blk + "ffn_up.weight", {2 * int64_t{spec.ffn}, hidden});
    add(blk + "ffn_down.weight", {hidden, spec.ffn});
  }
  add("output_norm.weight", {hidden});
  if (!spec.tied_embeddings) add("output.weight", {spec.vocab, hidden});
  return tensors;
}

const HfNamePart kPhi3HfParts[] = {
    {"attn_qkv.", "self_attn.qkv_proj."},
    {"ffn_up.", "mlp.gate_up_proj."},
};

// transformers' LongRoPE attention factor for a context stretched `scale` times `original`.
float LongRopeAttentionFactor(double scale, double original) {
  return scale <= 1.0 ? 1.0f
                      : static_cast<float>(std::sqrt(1.0 + std::log(scale) / std::log(original)));
}

// The short factors become the rope's divisors, the long ones wait in the config.
void SetLongRope(std::vector<float> short_factors, std::vector<float> long_factors,
                 int32_t original, float attention_factor, ModelConfig* config) {
  config->rope.scaling = RopeScaling::kDivisors;
  config->rope.divisors = std::move(short_factors);
  config->rope.original_max_position = original;
  config->rope.attention_factor = attention_factor;
  config->rope_long_factors = std::move(long_factors);
}

Status Phi3FromHf(const HfConfig& hf, ModelConfig* config) {
  const int64_t rotary = static_cast<int64_t>(hf.partial_rotary_factor * hf.head_dim);
  config->rope.rotary_dim = static_cast<int32_t>(rotary - rotary % 2);
  if (hf.rope_scaling.type != "longrope") return Ok();
  const size_t pairs = static_cast<size_t>(config->rope.rotary_dim / 2);
  if (hf.rope_scaling.short_factor.size() != pairs) {
    return InvalidInput(hf.path + ": rope_scaling.short_factor has " +
                        std::to_string(hf.rope_scaling.short_factor.size()) +
                        " entries, expected one per rotary pair (" + std::to_string(pairs) + ")");
  }
  const int64_t original = hf.original_max_position_embeddings.value_or(
      hf.rope_scaling.original_max_position_embeddings);
  const double scale = static_cast<double>(hf.max_position_embeddings) / original;
  std::vector<float> short_factors(hf.rope_scaling.short_factor.begin(),
                                   hf.rope_scaling.short_factor.end());
  std::vector<float> long_factors(hf.rope_scaling.long_factor.begin(),
                                  hf.rope_scaling.long_factor.end());
  SetLongRope(std::move(short_factors), std::move(long_factors), static_cast<int32_t>(original),
              LongRopeAttentionFactor(scale, static_cast<double>(original)), config);
  return Ok();
}

Status Phi3FromGguf(const GgufFile& gguf, const std::string& arch, ModelConfig* config) {
  if (gguf.FindTensor("rope_factors_long.weight") == nullptr) return Ok();
  const GgufKeys keys(gguf, arch);
  const int64_t pairs = config->rope.rotary_dim / 2;
  const int32_t original =
      KITE_TRY(keys.Int("rope.scaling.original_context_length", config->context_length));
  const float computed =
      LongRopeAttentionFactor(static_cast<double>(config->context_length) / original, original);
  SetLongRope(KITE_TRY(ReadConfigTensor(gguf, "rope_factors_short.weight", pairs)),
              KITE_TRY(ReadConfigTensor(gguf, "rope_factors_long.weight", pairs)), original,
              KITE_TRY(keys.Float("rope.scaling.attn_factor", computed)), config);
  return Ok();
}

std::string Phi3GgufArch(const ModelConfig&) { return "phi3"; }

// As llama.cpp's converter writes them: the window (0 for none), and for LongRoPE the
// attention factor and the original context.
void Phi3ToGguf(const ModelConfig& config, const std::string& arch, GgufWriter* writer) {
  writer->SetUint32(arch + ".attention.sliding_window",
                    static_cast<uint32_t>(config.sliding_window));
  if (config.rope_long_factors.empty()) return;
  writer->SetFloat32(arch + ".rope.scaling.attn_factor", config.rope.attention_factor);
  writer->SetUint32(arch + ".rope.scaling.original_context_length",
                    static_cast<uint32_t>(config.rope.original_max_position));
}

std::vector<ConfigTensor> Phi3ConfigTensors(const ModelConfig& config) {
  if (config.rope_long_factors.empty()) return {};
  return {{"rope_factors_long.weight", config.rope_long_factors},
          {"rope_factors_short.weight", config.rope.divisors}};
}

}  // namespace

const Architecture kPhi3Architecture = {.family = "phi3",
                                        .tensors = &Phi3Tensors,
                                        .create = &CreateLlamaFamilyModel,
                                        .hf_parts = kPhi3HfParts,
                                        .from_hf = &Phi3FromHf,
                                        .from_gguf = &Phi3FromGguf,
                                        .gguf_arch = &Phi3GgufArch,
                                        .to_gguf = &Phi3ToGguf,
                                        .config_tensors = &Phi3ConfigTensors};

}  // namespace kite
