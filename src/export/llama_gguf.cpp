#include "export/llama_gguf.h"

#include <cmath>
#include <numbers>

#include "models/architectures.h"

namespace kite {

void SetLlamaMetadata(const ModelConfig& c, const LlamaGgufHeader& header, GgufWriter* writer) {
  const std::string& arch = header.arch;
  writer->SetString("general.architecture", arch);
  if (!header.name.empty()) writer->SetString("general.name", header.name);
  const auto u32 = [&](const std::string& key, int64_t value) {
    writer->SetUint32(arch + "." + key, static_cast<uint32_t>(value));
  };
  u32("context_length", c.context_length);
  u32("embedding_length", c.hidden);
  u32("block_count", c.n_layers);
  u32("feed_forward_length", c.ffn);
  u32("attention.head_count", c.n_heads);
  u32("attention.head_count_kv", c.n_kv_heads);
  u32("attention.key_length", c.head_dim);
  u32("attention.value_length", c.head_dim);
  u32("rope.dimension_count", c.rope.rotary_dim);
  u32("vocab_size", c.vocab);
  writer->SetFloat32(arch + ".attention.layer_norm_rms_epsilon", c.rms_eps);
  writer->SetFloat32(arch + ".rope.freq_base", c.rope.theta);
  if (c.rope.scaling == RopeScaling::kLinear) {
    writer->SetString(arch + ".rope.scaling.type", "linear");
    writer->SetFloat32(arch + ".rope.scaling.factor", c.rope.factor);
  }
  writer->SetUint32("general.file_type", header.file_type);
  writer->SetUint32("general.quantization_version", 2);  // ggml's k-quant layout generation
  const Architecture* architecture = FindFamily(c.family);
  if (architecture != nullptr && architecture->to_gguf != nullptr) {
    architecture->to_gguf(c, arch, writer);
  }
}

std::string GgufArchOf(const ModelConfig& config) {
  const Architecture* architecture = FindFamily(config.family);
  if (architecture == nullptr || architecture->gguf_arch == nullptr) return "llama";
  return architecture->gguf_arch(config);
}

std::vector<std::pair<std::string, std::vector<float>>> ConfigTensorsOf(const ModelConfig& c) {
  if (c.rope.scaling == RopeScaling::kLlama3) return {{"rope_freqs.weight", Llama3RopeFreqs(c)}};
  const Architecture* architecture = FindFamily(c.family);
  if (architecture == nullptr || architecture->config_tensors == nullptr) return {};
  return architecture->config_tensors(c);
}

std::vector<float> Llama3RopeFreqs(const ModelConfig& c) {
  const RopeAttrs& rope = c.rope;
  const double original = rope.original_max_position;
  const double low = rope.low_freq_factor, high = rope.high_freq_factor, factor = rope.factor;
  const double low_wavelength = original / low;
  const double high_wavelength = original / high;
  std::vector<float> divisors;
  for (int64_t i = 0; i < c.head_dim; i += 2) {
    const float freq = 1.0f / std::pow(rope.theta,
                                       static_cast<float>(i) / static_cast<float>(c.head_dim));
    const double wavelength = 2.0 * std::numbers::pi / freq;
    double divisor = factor;  // long wavelengths: slowed by the whole factor
    if (wavelength < high_wavelength) {
      divisor = 1.0;
    } else if (wavelength <= low_wavelength) {
      const double smooth = (original / wavelength - low) / (high - low);
      divisor = 1.0 / ((1.0 - smooth) / factor + smooth);
    }
    divisors.push_back(static_cast<float>(divisor));
  }
  return divisors;
}

}  // namespace kite
