#include "models/load_model.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <optional>
#include <set>

#include "models/onnx_import.h"

namespace kite {

namespace {

// Unused tensors listed by name in an error; the rest are counted.
constexpr size_t kListedTensors = 10;

// The layer a tensor name belongs to: N in "blk.N." (GGUF) or "layers.N." (transformers).
std::optional<int64_t> LayerIndex(std::string_view name) {
  for (std::string_view prefix : {"blk.", "layers."}) {
    size_t at = name.find(prefix);
    if (at == std::string_view::npos || (at > 0 && name[at - 1] != '.')) continue;
    size_t i = at + prefix.size();
    int64_t layer = 0;
    const size_t digits = i;
    while (i < name.size() && std::isdigit(static_cast<unsigned char>(name[i])) &&
           i - digits < 9) {
      layer = layer * 10 + (name[i++] - '0');
    }
    if (i > digits && i < name.size() && name[i] == '.') return layer;
  }
  return std::nullopt;
}

}  // namespace

Status BindWeights(const ModelConfig& config, std::span<const ExpectedTensor> tensors,
                   const std::function<Result<std::optional<TensorView>>(const std::string&)>& find,
                   const Model::FileNames& file_name, WeightStore* store) {
  for (const ExpectedTensor& expected : tensors) {
    const std::optional<TensorView> view = KITE_TRY(find(expected.name));
    if (!view) {
      return NotFound(config.source + ": missing tensor '" + file_name(expected.name) +
                      "', expected shape " + ShapeString(expected.shape));
    }
    if (view->shape != expected.shape) {
      return InvalidInput(config.source + ": tensor '" + file_name(expected.name) + "' has shape " +
                          ShapeString(view->shape) + ", expected " + ShapeString(expected.shape));
    }
    TensorView bound = *view;
    bound.name = expected.name;
    store->Add(std::move(bound));
  }
  return Ok();
}

Status RefuseUnusedTensors(const ModelConfig& spec, const WeightStore& store,
                           const Model::FileNames& file_name,
                           std::span<const std::string> file_tensors,
                           const std::function<bool(std::string_view)>& read_otherwise,
                           std::string_view layer_key) {
  std::set<std::string, std::less<>> used;
  for (const auto& [name, view] : store.weights()) used.insert(file_name(name));
  std::vector<std::string_view> unused;
  int64_t last_layer = -1;
  for (const std::string& name : file_tensors) {
    if (used.contains(name) || read_otherwise(name)) continue;
    unused.push_back(name);
    last_layer = std::max(last_layer, LayerIndex(name).value_or(-1));
  }
  if (unused.empty()) return Ok();
  std::string list;
  for (size_t i = 0; i < std::min(unused.size(), kListedTensors); ++i) {
    list += (i == 0 ? "" : ", ") + std::string(unused[i]);
  }
  if (unused.size() > kListedTensors) {
    list += " and " + std::to_string(unused.size() - kListedTensors) + " more";
  }
  const std::string layers = std::to_string(spec.n_layers);
  std::string why;
  if (last_layer >= spec.n_layers) {
    why = "the weights hold " + std::to_string(last_layer + 1) + " layers but " +
          std::string(layer_key) + " is " + layers;
  } else {
    why = "tensors a " + spec.architecture + " model of " + layers +
          " layers does not have (optional parts such as biases must be in every layer, block 0 "
          "included)";
  }
  return InvalidInput(spec.source + ": " + std::to_string(unused.size()) + " tensor" +
                      (unused.size() == 1 ? " is" : "s are") + " not used: " + list + "; " + why +
                      ". Kite reads a model completely or not at all");
}

std::string ModelLocation(const std::string& path) {
  std::error_code error;
  if (!std::filesystem::is_directory(path, error) &&
      (path.ends_with(".safetensors") || path.ends_with("config.json") ||
       path.ends_with(".onnx"))) {
    const std::string folder = std::filesystem::path(path).parent_path().string();
    return folder.empty() ? "." : folder;
  }
  return path;
}

Result<std::unique_ptr<Model>> LoadModel(const std::string& path) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) return LoadHfModel(path);
  if (!std::filesystem::exists(path, error)) {
    return NotFound(path +
                    ": no such file or folder (expected a Hugging Face model folder or a "
                    ".gguf or .onnx file)");
  }
  if (path.ends_with(".onnx")) return LoadOnnxModel(path);
  const std::string location = ModelLocation(path);
  if (location != path) return LoadHfModel(location);
  return LoadGgufModel(path);
}

}  // namespace kite
