#include "profile/shape_only_model.h"

#include <sys/mman.h>

#include <algorithm>
#include <climits>
#include <filesystem>
#include <optional>

#include "base/json_util.h"
#include "base/mapped_file.h"
#include "export/synth.h"
#include "models/architectures.h"
#include "models/hf_architectures.h"
#include "models/load_model.h"
#include "tensor/dtype.h"

#ifndef KITE_CALIBRATION_FILE
#define KITE_CALIBRATION_FILE "testdata/cost_model/calibration.json"
#endif

namespace kite {

namespace {

// PROT_NONE anonymous memory: address space only, nothing committed, any read faults.
struct Reservation {
  void* data = nullptr;
  size_t bytes = 0;
  ~Reservation() {
    if (data != nullptr) munmap(data, bytes);
  }
};

// The model `name` of the calibration file's "models" table (the shapes the cost model was fitted
// on), or nullopt when the table has no such model.
Result<std::optional<ModelConfig>> CalibrationModel(const std::string& name,
                                                    std::string* names) {
  const std::string file = KITE_CALIBRATION_FILE;
  const std::string text = KITE_TRY(ReadTextFile(file, kConfigFileLimit));
  const nlohmann::json json = KITE_TRY(ParseJson(text, file));
  if (!json.is_object() || !json.contains("models") || !json["models"].is_object()) {
    return InvalidInput(file + ": no \"models\" object");
  }
  for (const auto& [key, m] : json["models"].items()) *names += ", " + key;
  if (!json["models"].contains(name)) return std::optional<ModelConfig>();
  const nlohmann::json& m = json["models"][name];
  ModelConfig c;
  c.source = name + " (shapes from " + file + ")";
  auto field = [&](const char* key) -> Result<int32_t> {
    const std::optional<int64_t> v = m.contains(key) ? JsonInt(m[key]) : std::nullopt;
    if (!v || *v <= 0 || *v > INT32_MAX) {
      return InvalidInput(c.source + "." + key + ": expected a positive integer");
    }
    return static_cast<int32_t>(*v);
  };
  c.architecture = "llama";
  c.n_layers = KITE_TRY(field("layers"));
  c.hidden = KITE_TRY(field("hidden"));
  c.n_heads = KITE_TRY(field("heads"));
  c.n_kv_heads = KITE_TRY(field("kv_heads"));
  c.head_dim = KITE_TRY(field("head_dim"));
  c.ffn = KITE_TRY(field("ffn"));
  c.vocab = KITE_TRY(field("vocab"));
  c.tied_embeddings = m.value("tied", false);
  // Not in the table and not priced: any valid value builds the same graph shapes.
  c.context_length = 131072;
  c.rope.rotary_dim = c.head_dim;
  return std::optional<ModelConfig>(c);
}

}  // namespace

Result<std::unique_ptr<Model>> ShapeOnlyModel(const ModelConfig& config) {
  KITE_RETURN_IF_ERROR(config.Check());
  const Architecture* arch = KITE_TRY(FindArchitecture(config));
  const std::vector<ExpectedTensor> tensors = arch->tensors(config);
  uint64_t largest = 1;
  auto bytes_of = [](const ExpectedTensor& t) {
    uint64_t n = 1;
    for (int64_t d : t.shape) n *= static_cast<uint64_t>(d);
    return n * 2;  // f16
  };
  for (const ExpectedTensor& t : tensors) largest = std::max(largest, bytes_of(t));
  auto reservation = std::make_shared<Reservation>();
  void* data = mmap(nullptr, largest, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (data == MAP_FAILED) {
    return OutOfResources("cannot reserve " + std::to_string(largest) +
                          " bytes of address space for the shape-only weights of " +
                          config.source);
  }
  reservation->data = data;
  reservation->bytes = largest;
  WeightStore weights;
  weights.Keep(reservation);
  // Every view points at the same reservation: none is ever read.
  for (const ExpectedTensor& t : tensors) {
    weights.Add(TensorView{.name = t.name, .dtype = DType::kF16, .shape = t.shape, .data = data,
                           .bytes = bytes_of(t)});
  }
  return arch->create(config, std::move(weights), [](const std::string& name) { return name; });
}

Result<ModelConfig> ProfileModelConfig(const std::string& spec) {
  if (auto preset = FindSynthPreset(spec); preset) {
    ModelConfig config = (*preset)->config;
    config.source = "preset " + spec;
    return config;
  }
  std::error_code error;
  if (!std::filesystem::exists(spec, error)) {
    std::string names;
    for (const SynthPreset& p : SynthPresets()) names += (names.empty() ? "" : ", ") + p.name;
    if (auto config = KITE_TRY(CalibrationModel(spec, &names)); config) return *config;
    return NotFound("'" + spec +
                    "' is neither a file or folder nor a known model; the models are: " + names);
  }
  if (spec.ends_with(".gguf")) {
    const std::unique_ptr<Model> model = KITE_TRY(LoadGgufModel(spec));
    return model->config();
  }
  ModelConfig config = KITE_TRY(LoadHfModelConfig(spec));
  config.source = spec;
  return config;
}

}  // namespace kite
