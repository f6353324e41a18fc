// Test helper: writes a reference HF model folder as the GGUF file llama.cpp's
// convert_hf_to_gguf.py would make of it, independently of Kite's loaders:
//   - arch "llama" for Llama and Mistral, "qwen2" for Qwen2; llama.cpp's key names;
//   - for "llama", q_proj and k_proj rows (weights and biases) permuted per head by
//     permute(w, n_head, n_head_kv): reshape(n_head, 2, D/2, ...).swapaxes(1, 2), which turns
//     the rotate-half pairs (j, j + D/2) into adjacent rows (2j, 2j + 1);
//   - Llama 3 rope scaling as rope_freqs.weight (per-pair divisors, computed as the converter
//     does), linear scaling as rope.scaling.type/factor;
//   - tied embeddings as a missing output.weight; weights stored F32 (F16/BF16 widen exactly);
//   - a tokenizer.ggml vocabulary with the HF tokenizer's pieces (scores -id, so the tests
//     compare logits, not tokenization).
#pragma once

#include <cmath>
#include <deque>
#include <nlohmann/json.hpp>
#include <numbers>
#include <string>
#include <vector>

#include "base/mapped_file.h"
#include "format/gguf.h"
#include "format/safetensors.h"
#include "tensor/dequantize.h"
#include "tokenizer/tokenizer.h"

namespace kite::testing {

// The converter's per-head row permutation of a [rows, cols] matrix (cols = 1 for a bias).
inline std::vector<float> PermuteRowsLikeLlamaCpp(const std::vector<float>& w, int64_t rows,
                                                  int64_t cols, int64_t n_head) {
  std::vector<float> out(w.size());
  const int64_t head_dim = rows / n_head;
  const int64_t half = head_dim / 2;
  for (int64_t h = 0; h < n_head; ++h) {
    for (int64_t j = 0; j < half; ++j) {
      for (int64_t s = 0; s < 2; ++s) {
        const int64_t from = h * head_dim + s * half + j;
        const int64_t to = h * head_dim + 2 * j + s;
        std::copy(w.begin() + from * cols, w.begin() + (from + 1) * cols, out.begin() + to * cols);
      }
    }
  }
  return out;
}

inline GgufValue FloatArray(const std::vector<float>& values) {
  GgufValue::Array array{GgufType::kFloat32, {}};
  for (float v : values) array.items.push_back(GgufValue{v});
  return GgufValue{array};
}
inline GgufValue Int32Array(const std::vector<int32_t>& values) {
  GgufValue::Array array{GgufType::kInt32, {}};
  for (int32_t v : values) array.items.push_back(GgufValue{v});
  return GgufValue{array};
}

// The config.json fields the converter reads (read here directly, not with Kite's parser: the
// reference fixtures' configs give every field this needs).
struct ReferenceConfig {
  std::string architecture;
  int64_t num_hidden_layers = 0, max_position_embeddings = 0, hidden_size = 0;
  int64_t intermediate_size = 0, num_attention_heads = 0, num_key_value_heads = 0, head_dim = 0;
  double rms_norm_eps = 0, rope_theta = 0;
  bool tie_word_embeddings = false;
  struct {
    std::string type = "none";
    double factor = 1, low_freq_factor = 1, high_freq_factor = 4;
    double original_max_position_embeddings = 8192;
  } rope_scaling;
};

inline Result<ReferenceConfig> ReadReferenceConfig(const std::string& folder) {
  const std::string text = KITE_TRY(ReadTextFile(folder + "/config.json", kConfigFileLimit));
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("architectures") || !j["architectures"].is_array() ||
      j["architectures"].empty() || !j["architectures"][0].is_string()) {
    return InvalidInput(folder + "/config.json: no architectures");
  }
  ReferenceConfig c;
  c.architecture = j["architectures"][0].get<std::string>();
  auto number = [&](const nlohmann::json& o, const char* key, double fallback) {
    return o.contains(key) && o[key].is_number() ? o[key].get<double>() : fallback;
  };
  c.num_hidden_layers = static_cast<int64_t>(number(j, "num_hidden_layers", 0));
  c.max_position_embeddings = static_cast<int64_t>(number(j, "max_position_embeddings", 0));
  c.hidden_size = static_cast<int64_t>(number(j, "hidden_size", 0));
  c.intermediate_size = static_cast<int64_t>(number(j, "intermediate_size", 0));
  c.num_attention_heads = static_cast<int64_t>(number(j, "num_attention_heads", 1));
  c.num_key_value_heads =
      static_cast<int64_t>(number(j, "num_key_value_heads", c.num_attention_heads));
  c.head_dim = static_cast<int64_t>(
      number(j, "head_dim", static_cast<double>(c.hidden_size / c.num_attention_heads)));
  c.rms_norm_eps = number(j, "rms_norm_eps", 1e-6);
  c.rope_theta = number(j, "rope_theta", 10000.0);
  c.tie_word_embeddings = j.contains("tie_word_embeddings") &&
                          j["tie_word_embeddings"].is_boolean() &&
                          j["tie_word_embeddings"].get<bool>();
  if (j.contains("rope_scaling") && j["rope_scaling"].is_object()) {
    const nlohmann::json& r = j["rope_scaling"];
    for (const char* key : {"rope_type", "type"}) {
      if (r.contains(key) && r[key].is_string()) c.rope_scaling.type = r[key].get<std::string>();
    }
    c.rope_scaling.factor = number(r, "factor", 1);
    c.rope_scaling.low_freq_factor = number(r, "low_freq_factor", 1);
    c.rope_scaling.high_freq_factor = number(r, "high_freq_factor", 4);
    c.rope_scaling.original_max_position_embeddings =
        number(r, "original_max_position_embeddings", 8192);
  }
  return c;
}

inline Status WriteGgufLikeLlamaCpp(const std::string& folder, const std::string& path) {
  const ReferenceConfig config = KITE_TRY(ReadReferenceConfig(folder));
  const SafetensorsModel model = KITE_TRY(SafetensorsModel::OpenFolder(folder));
  const auto tokenizer = KITE_TRY(Tokenizer::Load(folder));
  const bool qwen2 = config.architecture == "Qwen2ForCausalLM";
  const std::string arch = qwen2 ? "qwen2" : "llama";

  GgufWriter writer;
  writer.SetString("general.architecture", arch);
  auto u32 = [&](const std::string& key, int64_t v) {
    writer.SetUint32(arch + "." + key, static_cast<uint32_t>(v));
  };
  u32("block_count", config.num_hidden_layers);
  u32("context_length", config.max_position_embeddings);
  u32("embedding_length", config.hidden_size);
  u32("feed_forward_length", config.intermediate_size);
  u32("attention.head_count", config.num_attention_heads);
  u32("attention.head_count_kv", config.num_key_value_heads);
  u32("attention.key_length", config.head_dim);
  u32("attention.value_length", config.head_dim);
  u32("rope.dimension_count", config.head_dim);
  writer.SetFloat32(arch + ".attention.layer_norm_rms_epsilon",
                    static_cast<float>(config.rms_norm_eps));
  writer.SetFloat32(arch + ".rope.freq_base", static_cast<float>(config.rope_theta));
  if (config.rope_scaling.type == "linear") {
    writer.SetString(arch + ".rope.scaling.type", "linear");
    writer.SetFloat32(arch + ".rope.scaling.factor",
                      static_cast<float>(config.rope_scaling.factor));
  }

  std::vector<std::string> pieces;
  std::vector<float> scores;
  std::vector<int32_t> types;
  for (int32_t id = 0; id < tokenizer->vocab_size(); ++id) {
    const std::string text(tokenizer->TokenText(id));
    pieces.push_back(text);
    scores.push_back(-static_cast<float>(id));
    const bool byte = text.size() == 6 && text.starts_with("<0x") && text.ends_with(">");
    types.push_back(id == 0 ? 2 : id <= 2 ? 3 : byte ? 6 : 1);  // unknown, control, byte, normal
  }
  writer.SetString("tokenizer.ggml.model", "llama");
  writer.SetStringArray("tokenizer.ggml.tokens", pieces);
  writer.SetValue("tokenizer.ggml.scores", FloatArray(scores));
  writer.SetValue("tokenizer.ggml.token_type", Int32Array(types));
  writer.SetUint32("tokenizer.ggml.bos_token_id", 1);
  writer.SetUint32("tokenizer.ggml.eos_token_id", 2);

  std::deque<std::vector<float>> data;  // alive until Write
  auto add = [&](const std::string& gguf_name, const std::string& hf_name,
                 int64_t permute_heads) -> Status {
    const TensorView view = KITE_TRY(model.GetTensor(hf_name));
    const int64_t elements = static_cast<int64_t>(KITE_TRY(ElementCount(view.shape)));
    std::vector<float> values(elements);
    KITE_RETURN_IF_ERROR(Dequantize(view.dtype, view.data, values.data(), elements));
    if (permute_heads > 0) {
      const int64_t cols = view.shape.size() == 2 ? view.shape[1] : 1;
      values = PermuteRowsLikeLlamaCpp(values, view.shape[0], cols, permute_heads);
    }
    const std::vector<float>& stored = data.emplace_back(std::move(values));
    return writer.AddTensor(
        gguf_name, DType::kF32, view.shape,
        {reinterpret_cast<const uint8_t*>(stored.data()), stored.size() * sizeof(float)});
  };
  auto add_if_present = [&](const std::string& gguf_name, const std::string& hf_name,
                            int64_t permute_heads) -> Status {
    if (model.Find(hf_name) == nullptr) return Ok();
    return add(gguf_name, hf_name, permute_heads);
  };

  KITE_RETURN_IF_ERROR(add("token_embd.weight", "model.embed_tokens.weight", 0));
  const int64_t q_heads = qwen2 ? 0 : config.num_attention_heads;
  const int64_t k_heads = qwen2 ? 0 : config.num_key_value_heads;
  for (int64_t layer = 0; layer < config.num_hidden_layers; ++layer) {
    const std::string blk = "blk." + std::to_string(layer) + ".";
    const std::string hf = "model.layers." + std::to_string(layer) + ".";
    KITE_RETURN_IF_ERROR(add(blk + "attn_norm.weight", hf + "input_layernorm.weight", 0));
    for (const char* part : {"weight", "bias"}) {
      const std::string p = part;
      KITE_RETURN_IF_ERROR(
          add_if_present(blk + "attn_q." + p, hf + "self_attn.q_proj." + p, q_heads));
      KITE_RETURN_IF_ERROR(
          add_if_present(blk + "attn_k." + p, hf + "self_attn.k_proj." + p, k_heads));
      KITE_RETURN_IF_ERROR(add_if_present(blk + "attn_v." + p, hf + "self_attn.v_proj." + p, 0));
      KITE_RETURN_IF_ERROR(
          add_if_present(blk + "attn_output." + p, hf + "self_attn.o_proj." + p, 0));
      KITE_RETURN_IF_ERROR(add_if_present(blk + "ffn_gate." + p, hf + "mlp.gate_proj." + p, 0));
      KITE_RETURN_IF_ERROR(add_if_present(blk + "ffn_up." + p, hf + "mlp.up_proj." + p, 0));
      KITE_RETURN_IF_ERROR(add_if_present(blk + "ffn_down." + p, hf + "mlp.down_proj." + p, 0));
    }
    KITE_RETURN_IF_ERROR(add(blk + "ffn_norm.weight", hf + "post_attention_layernorm.weight", 0));
  }
  KITE_RETURN_IF_ERROR(add("output_norm.weight", "model.norm.weight", 0));
  if (!config.tie_word_embeddings) KITE_RETURN_IF_ERROR(add("output.weight", "lm_head.weight", 0));

  if (config.rope_scaling.type == "llama3") {
    // convert_hf_to_gguf.py: freqs in float32, the blend in Python floats, stored float32.
    const auto& s = config.rope_scaling;
    const double original = s.original_max_position_embeddings;
    const double low_wavelength = original / s.low_freq_factor;
    const double high_wavelength = original / s.high_freq_factor;
    std::vector<float>& factors = data.emplace_back();
    for (int64_t i = 0; i < config.head_dim; i += 2) {
      const float freq = 1.0f / std::pow(static_cast<float>(config.rope_theta),
                                         static_cast<float>(i) / config.head_dim);
      const double wavelength = 2.0 * std::numbers::pi / freq;
      double factor = s.factor;
      if (wavelength < high_wavelength) {
        factor = 1.0;
      } else if (wavelength <= low_wavelength) {
        const double smooth =
            (original / wavelength - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
        factor = 1.0 / ((1.0 - smooth) / s.factor + smooth);
      }
      factors.push_back(static_cast<float>(factor));
    }
    KITE_RETURN_IF_ERROR(writer.AddTensor(
        "rope_freqs.weight", DType::kF32, {static_cast<int64_t>(factors.size())},
        {reinterpret_cast<const uint8_t*>(factors.data()), factors.size() * sizeof(float)}));
  }
  return writer.Write(path);
}

}  // namespace kite::testing
