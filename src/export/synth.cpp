// Preset shapes are those of each model's published config.json (Hugging Face model repos
// meta-llama/Llama-3.2-1B, meta-llama/Llama-3.2-3B, Qwen/Qwen2.5-0.5B, HuggingFaceTB/SmolLM2-135M,
// Qwen/Qwen3-0.6B, google/gemma-3-1b-it, microsoft/Phi-4-mini-instruct).
#include "export/synth.h"

#include <algorithm>
#include <bit>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>

#include "base/hash.h"
#include "base/mapped_file.h"
#include "export/tokenizer_export.h"
#include "export/weight_types.h"
#include "models/architectures.h"
#include "tensor/quantize.h"

namespace kite {

namespace {

constexpr float kWeightStd = 0.02f;

// llama.cpp's converter permutes arch "llama"'s q/k rows and runs its rope interleaved.
ModelConfig GgufConfig(std::string arch, bool qkv_bias) {
  ModelConfig c;
  c.rope.mode = arch == "llama" ? RopeMode::kInterleaved : RopeMode::kNeox;
  c.architecture = std::move(arch);
  c.q_bias = c.k_bias = c.v_bias = qkv_bias;
  c.tied_embeddings = true;  // every preset ties lm_head to the embedding
  return c;
}

ModelConfig Llama32(int32_t layers, int32_t hidden, int32_t heads, int32_t head_dim) {
  ModelConfig c = GgufConfig("llama", false);
  c.n_layers = layers;
  c.hidden = hidden;
  c.n_heads = heads;
  c.n_kv_heads = 8;
  c.head_dim = head_dim;
  c.ffn = 8192;
  c.vocab = 128256;
  c.context_length = 131072;
  c.rms_eps = 1e-5f;
  c.rope.theta = 500000.0f;
  c.rope.rotary_dim = head_dim;
  c.rope.scaling = RopeScaling::kLlama3;
  c.rope.factor = 32.0f;
  c.rope.low_freq_factor = 1.0f;
  c.rope.high_freq_factor = 4.0f;
  c.rope.original_max_position = 8192;
  return c;
}

std::vector<SynthPreset> MakePresets() {
  std::vector<SynthPreset> presets;
  presets.push_back({"llama-3.2-1b", Llama32(16, 2048, 32, 64), "tokenizers/llama3",
                     "chat_templates/llama3.2.jinja", ""});
  presets.push_back({"llama-3.2-3b", Llama32(28, 3072, 24, 128), "tokenizers/llama3",
                     "chat_templates/llama3.2.jinja", ""});
  ModelConfig qwen = GgufConfig("qwen2", true);
  qwen.n_layers = 24;
  qwen.hidden = 896;
  qwen.n_heads = 14;
  qwen.n_kv_heads = 2;
  qwen.head_dim = 64;
  qwen.ffn = 4864;
  qwen.vocab = 151936;
  qwen.context_length = 32768;
  qwen.rms_eps = 1e-6f;
  qwen.rope.theta = 1e6f;
  qwen.rope.rotary_dim = qwen.head_dim;
  presets.push_back({"qwen2.5-0.5b", qwen, "gguf-vocab/ggml-vocab-qwen2.gguf",
                     "chat_templates/qwen2.5.jinja", ""});
  ModelConfig smol = GgufConfig("llama", false);
  smol.n_layers = 30;
  smol.hidden = 576;
  smol.n_heads = 9;
  smol.n_kv_heads = 3;
  smol.head_dim = 64;
  smol.ffn = 1536;
  smol.vocab = 49152;
  smol.context_length = 8192;
  smol.rms_eps = 1e-5f;
  smol.rope.theta = 100000.0f;
  smol.rope.rotary_dim = smol.head_dim;
  presets.push_back({"smollm2-135m", smol, "gguf-vocab/ggml-vocab-gpt-2.gguf",
                     "chat_templates/smollm2.jinja",
                     "SmolLM2's own tokenizer is not in the repository: GPT-2's byte-level BPE cut "
                     "to 49152 tokens stands in for it"});

  ModelConfig qwen3 = GgufConfig("qwen3", false);
  qwen3.family = "qwen3";
  qwen3.qk_norm = true;
  qwen3.n_layers = 28;
  qwen3.hidden = 1024;
  qwen3.n_heads = 16;
  qwen3.n_kv_heads = 8;
  qwen3.head_dim = 128;
  qwen3.ffn = 3072;
  qwen3.vocab = 151936;
  qwen3.context_length = 40960;
  qwen3.rms_eps = 1e-6f;
  qwen3.rope.theta = 1e6f;
  qwen3.rope.rotary_dim = qwen3.head_dim;
  presets.push_back({"qwen3-0.6b", qwen3, "gguf-vocab/ggml-vocab-qwen2.gguf",
                     "chat_templates/qwen2.5.jinja",
                     "Qwen2's byte-level BPE (the vocabulary Qwen3 extends with its added tokens) "
                     "stands in for Qwen3's tokenizer.json; Qwen2.5's chat template"});

  ModelConfig gemma = GgufConfig("gemma3", false);
  gemma.family = "gemma";
  gemma.qk_norm = true;
  gemma.n_layers = 26;
  gemma.hidden = 1152;
  gemma.n_heads = 4;
  gemma.n_kv_heads = 1;
  gemma.head_dim = 256;
  gemma.ffn = 6912;
  gemma.vocab = 262144;
  gemma.context_length = 32768;
  gemma.rms_eps = 1e-6f;
  gemma.rope.theta = 1e6f;
  gemma.rope.rotary_dim = gemma.head_dim;
  gemma.sliding_window = 512;
  gemma.sliding_window_pattern = 6;
  gemma.attention_scale = 1.0f / 16.0f;  // query_pre_attn_scalar 256
  presets.push_back({"gemma-3-1b", gemma, "gguf-vocab/ggml-vocab-llama-spm.gguf",
                     "chat_templates/gemma.jinja",
                     "Gemma 3's 262144-piece SentencePiece model is not in the repository: "
                     "Llama 2's SentencePiece vocabulary, padded to 262144, stands in for it"});

  ModelConfig phi = GgufConfig("phi3", false);
  phi.family = "phi3";
  phi.n_layers = 32;
  phi.hidden = 3072;
  phi.n_heads = 24;
  phi.n_kv_heads = 8;
  phi.head_dim = 128;
  phi.ffn = 8192;
  phi.vocab = 200064;
  phi.context_length = 131072;
  phi.rms_eps = 1e-5f;
  phi.rope.theta = 10000.0f;
  phi.rope.rotary_dim = 96;  // partial_rotary_factor 0.75
  phi.sliding_window = 262144;
  // LongRoPE over 48 pairs from the original 4096 positions; attention factor
  // √(1 + ln 32 / ln 4096). The published factors are not in the repository: short 1, long a
  // geometric ramp from 1 to 32 stand in for them (they change angles, not speed).
  phi.rope.scaling = RopeScaling::kDivisors;
  phi.rope.divisors.assign(48, 1.0f);
  for (int i = 0; i < 48; ++i) {
    phi.rope_long_factors.push_back(static_cast<float>(std::pow(32.0, i / 47.0)));
  }
  phi.rope.original_max_position = 4096;
  phi.rope.attention_factor =
      static_cast<float>(std::sqrt(1.0 + std::log(32.0) / std::log(4096.0)));
  presets.push_back({"phi-4-mini", phi, "gguf-vocab/ggml-vocab-gpt-2.gguf",
                     "chat_templates/phi3.5.jinja",
                     "Phi-4-mini's o200k tokenizer is not in the repository: GPT-2's byte-level "
                     "BPE, padded to 200064, stands in for it; LongRoPE factors are placeholders"});
  return presets;
}

// splitmix64: a fast, well-mixed stream from any 64-bit state.
uint64_t SplitMix(uint64_t* state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Row `row` of tensor `name`: N(0, std) approximated by the sum of four 16-bit uniforms
// (Irwin-Hall, variance 4/12), seeded per row so any chunking gives the same values.
void RandomRow(uint64_t seed, uint64_t name_hash, int64_t row, float std, std::span<float> out) {
  uint64_t state = seed ^ name_hash ^ (static_cast<uint64_t>(row) * 0xd1b54a32d192ed03ULL);
  const float scale = std * std::sqrt(3.0f) / 65536.0f;
  for (float& v : out) {
    const uint64_t bits = SplitMix(&state);
    const float sum = static_cast<float>((bits & 0xffff) + ((bits >> 16) & 0xffff) +
                                         ((bits >> 32) & 0xffff) + (bits >> 48));
    v = (sum - 2.0f * 65536.0f) * scale;
  }
}

// The spread of tensor `name`'s weights: quiet_scale times kWeightStd for the output
// projections of blocks from quiet_from on (SynthOptions), else kWeightStd.
float WeightStd(const std::string& name, const SynthOptions& options) {
  int64_t block = -1;
  char projection[32] = {};
  if (options.quiet_from <= 0 ||
      std::sscanf(name.c_str(), "blk.%" SCNd64 ".%31[a-z_]", &block, projection) != 2) {
    return kWeightStd;
  }
  const std::string_view kind(projection);
  const bool output = kind == "attn_output" || kind == "ffn_down";
  return output && block >= options.quiet_from ? kWeightStd * options.quiet_scale : kWeightStd;
}

StreamedTensor RandomTensor(const PlannedTensor& expected, uint64_t seed, float spread) {
  const DType dtype = expected.dtype;
  const bool norm = expected.name.find("_norm.weight") != std::string::npos;
  const uint64_t name_hash = Fnv1aString(expected.name);
  const int64_t columns = expected.shape.back();
  StreamedTensor out{expected.name, dtype, expected.shape, nullptr};
  out.fill = [=](int64_t first, int64_t rows, std::span<uint8_t> dst) -> Status {
    const uint64_t row_bytes = dst.size() / static_cast<uint64_t>(rows);
    std::vector<float> values(columns, 1.0f);
    for (int64_t r = first; r < first + rows; ++r) {
      if (!norm) RandomRow(seed, name_hash, r, spread, values);
      KITE_RETURN_IF_ERROR(
          Quantize(dtype, values.data(), dst.data() + (r - first) * row_bytes, columns));
    }
    return Ok();
  };
  return out;
}

Result<GgufTokenizer> PresetTokenizer(const SynthPreset& preset, const SynthOptions& options,
                                      int64_t vocab) {
  const std::filesystem::path data(options.data_dir);
  const bool own = options.tokenizer.empty();
  const std::string path = own ? (data / preset.tokenizer).string() : options.tokenizer;
  GgufTokenizer tokenizer = KITE_TRY(LoadGgufTokenizer(path));
  KITE_RETURN_IF_ERROR(ResizeVocab(static_cast<int32_t>(vocab), path, &tokenizer));
  if (own && preset.config.architecture == "llama" && preset.name.starts_with("llama")) {
    tokenizer.add_bos = true;  // Llama 3.2's tokenizer.json adds <|begin_of_text|>
  }
  const std::filesystem::path template_path = data / preset.chat_template;
  std::error_code error;
  if (!preset.chat_template.empty() && (own || tokenizer.chat_template.empty()) &&
      std::filesystem::is_regular_file(template_path, error)) {
    tokenizer.chat_template = KITE_TRY(ReadTextFile(template_path.string(), kConfigFileLimit));
  }
  return tokenizer;
}

struct Plan {
  const SynthPreset* preset = nullptr;
  ModelConfig config;
  LlamaGgufHeader header;
  std::vector<PlannedTensor> tensors;
};

Result<Plan> MakePlan(const SynthOptions& options) {
  Plan plan;
  plan.preset = KITE_TRY(FindSynthPreset(options.preset));
  const ExportType type = KITE_TRY(ParseExportType(options.type));
  if (options.layers < 0 || options.layers > INT32_MAX || options.vocab < 0 ||
      options.vocab > INT32_MAX) {
    return InvalidInput("--layers and --vocab must be positive (0: the preset's)");
  }
  if (options.quiet_from < 0 || !(options.quiet_scale >= 0.0f && options.quiet_scale <= 1.0f)) {
    return InvalidInput("--quiet-from must be 0 or more and --quiet-scale in [0, 1], got " +
                        std::to_string(options.quiet_from) + " and " +
                        std::to_string(options.quiet_scale));
  }
  ModelConfig& config = plan.config;
  config = plan.preset->config;
  if (options.layers > 0) config.n_layers = static_cast<int32_t>(options.layers);
  if (options.vocab > 0) config.vocab = static_cast<int32_t>(options.vocab);
  plan.header = {.arch = config.architecture,
                 .name = plan.preset->name + " (random weights)",
                 .file_type = type.file_type};

  for (const auto& [name, values] : ConfigTensorsOf(config)) {
    plan.tensors.push_back({name, {static_cast<int64_t>(values.size())}, DType::kF32});
  }
  const Architecture& architecture = *KITE_TRY(FindArchitecture(config));
  for (const ExpectedTensor& expected : architecture.tensors(config)) {
    plan.tensors.push_back({expected.name, expected.shape,
                            ChooseTensorType(type, expected.name, expected.shape, config.n_layers,
                                             config.tied_embeddings)});
  }
  return plan;
}

}  // namespace

const std::vector<SynthPreset>& SynthPresets() {
  static const std::vector<SynthPreset> presets = MakePresets();
  return presets;
}

Result<const SynthPreset*> FindSynthPreset(const std::string& name) {
  std::string names;
  for (const SynthPreset& preset : SynthPresets()) {
    if (preset.name == name) return &preset;
    names += (names.empty() ? "" : ", ") + preset.name;
  }
  return InvalidInput("preset '" + name + "' is not one of: " + names);
}

Result<std::vector<PlannedTensor>> PlanSynthTensors(const SynthOptions& options) {
  return KITE_TRY(MakePlan(options)).tensors;
}

Status SynthesizeGguf(const SynthOptions& options, const std::string& out_path) {
  const Plan plan = KITE_TRY(MakePlan(options));
  const GgufTokenizer tokenizer =
      KITE_TRY(PresetTokenizer(*plan.preset, options, plan.config.vocab));
  GgufWriter writer;
  SetLlamaMetadata(plan.config, plan.header, &writer);
  writer.SetString("kite.synth.preset", plan.preset->name);
  writer.SetValue("kite.synth.seed", GgufValue{options.seed});
  SetTokenizerMetadata(tokenizer, &writer);

  std::vector<StreamedTensor> tensors;
  const auto config_tensors = ConfigTensorsOf(plan.config);
  for (const PlannedTensor& planned : plan.tensors) {
    const auto config_tensor =
        std::find_if(config_tensors.begin(), config_tensors.end(),
                     [&](const auto& entry) { return entry.first == planned.name; });
    if (config_tensor != config_tensors.end()) {
      const auto values = std::make_shared<const std::vector<float>>(config_tensor->second);
      tensors.push_back({planned.name, planned.dtype, planned.shape,
                         [values](int64_t, int64_t, std::span<uint8_t> dst) -> Status {
                           std::memcpy(dst.data(), values->data(), dst.size());
                           return Ok();
                         }});
    } else {
      tensors.push_back(RandomTensor(planned, options.seed, WeightStd(planned.name, options)));
    }
  }
  // The tokenizer (a file or a folder) and the template were read: neither may be the output.
  const std::filesystem::path data(options.data_dir);
  std::vector<std::string> inputs = {
      options.tokenizer.empty() ? (data / plan.preset->tokenizer).string() : options.tokenizer};
  if (!plan.preset->chat_template.empty()) {
    inputs.push_back((data / plan.preset->chat_template).string());
  }
  return WriteGgufStreaming(writer, tensors, out_path, inputs, options.progress);
}

}  // namespace kite
