#include "export/llama_gguf.h"

#include <cmath>
#include <numbers>

namespace kite {

void SetLlamaMetadata(const LlamaGgufConfig& c, GgufWriter* writer) {
  writer->SetString("general.architecture", c.arch);
  if (!c.name.empty()) writer->SetString("general.name", c.name);
  const auto u32 = [&](const std::string& key, int64_t value) {
    writer->SetUint32(c.arch + "." + key, static_cast<uint32_t>(value));
  };
  u32("context_length", c.context_length);
  u32("embedding_length", c.hidden);
  u32("block_count", c.n_layers);
  u32("feed_forward_length", c.ffn);
  u32("attention.head_count", c.n_heads);
  u32("attention.head_count_kv", c.n_kv_heads);
  u32("attention.key_length", c.head_dim);
  u32("attention.value_length", c.head_dim);
  u32("rope.dimension_count", c.head_dim);
  u32("vocab_size", c.vocab);
  writer->SetFloat32(c.arch + ".attention.layer_norm_rms_epsilon", static_cast<float>(c.rms_eps));
  writer->SetFloat32(c.arch + ".rope.freq_base", static_cast<float>(c.rope_theta));
  if (c.rope_scaling == "linear") {
    writer->SetString(c.arch + ".rope.scaling.type", "linear");
    writer->SetFloat32(c.arch + ".rope.scaling.factor", static_cast<float>(c.rope_factor));
  }
  writer->SetUint32("general.file_type", c.file_type);
  writer->SetUint32("general.quantization_version", 2);  // ggml's k-quant layout generation
}

std::vector<float> Llama3RopeFreqs(const LlamaGgufConfig& c) {
  const double low_wavelength = static_cast<double>(c.original_context) / c.low_freq_factor;
  const double high_wavelength = static_cast<double>(c.original_context) / c.high_freq_factor;
  std::vector<float> divisors;
  for (int64_t i = 0; i < c.head_dim; i += 2) {
    const float freq = 1.0f / std::pow(static_cast<float>(c.rope_theta),
                                       static_cast<float>(i) / static_cast<float>(c.head_dim));
    const double wavelength = 2.0 * std::numbers::pi / freq;
    double divisor = c.rope_factor;  // long wavelengths: slowed by the whole factor
    if (wavelength < high_wavelength) {
      divisor = 1.0;
    } else if (wavelength <= low_wavelength) {
      const double smooth = (c.original_context / wavelength - c.low_freq_factor) /
                            (c.high_freq_factor - c.low_freq_factor);
      divisor = 1.0 / ((1.0 - smooth) / c.rope_factor + smooth);
    }
    divisors.push_back(static_cast<float>(divisor));
  }
  return divisors;
}

}  // namespace kite
