#include "quant/imatrix_file.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "format/gguf.h"

namespace kite {

namespace {

constexpr std::string_view kSum2 = ".in_sum2";
constexpr std::string_view kCounts = ".counts";

std::span<const uint8_t> Bytes(const std::vector<float>& values) {
  return {reinterpret_cast<const uint8_t*>(values.data()), values.size() * sizeof(float)};
}

}  // namespace

Status WriteImatrixGguf(const CalibrationStats& stats, const ImatrixInfo& info,
                        const std::string& path, const std::vector<std::string>& inputs) {
  GgufWriter writer;
  writer.SetString("general.type", "imatrix");
  writer.SetStringArray("imatrix.datasets", info.datasets);
  writer.SetUint32("imatrix.chunk_count", info.chunk_count);
  writer.SetUint32("imatrix.chunk_size", info.chunk_size);
  // The writer keeps spans into these until Write returns. stats.linears is a std::map: the
  // weights come sorted by name, as llama.cpp stores them.
  std::vector<std::vector<float>> data;
  data.reserve(2 * stats.linears.size());
  for (const auto& [name, linear] : stats.linears) {
    if (linear.rows_seen == 0 || linear.columns == 0) continue;
    std::vector<float>& sum2 = data.emplace_back(linear.sum_sq.begin(), linear.sum_sq.end());
    std::vector<float>& counts = data.emplace_back(1, static_cast<float>(linear.rows_seen));
    KITE_RETURN_IF_ERROR(
        writer.AddTensor(name + std::string(kSum2), DType::kF32, {1, linear.columns}, Bytes(sum2)));
    KITE_RETURN_IF_ERROR(
        writer.AddTensor(name + std::string(kCounts), DType::kF32, {1, 1}, Bytes(counts)));
  }
  return writer.Write(path, inputs);
}

Result<CalibrationStats> ReadImatrixGguf(const std::string& path, ImatrixInfo* info) {
  const GgufFile file = KITE_TRY(GgufFile::Open(path));
  if (auto type = file.GetString("general.type"); !type || *type != "imatrix") {
    return InvalidInput(path + ": general.type is not \"imatrix\": not an importance matrix");
  }
  if (info != nullptr) {
    *info = {};
    if (auto datasets = file.GetArray("imatrix.datasets")) {
      for (const GgufValue& item : (*datasets)->items) {
        if (const std::string* text = item.AsString()) info->datasets.push_back(*text);
      }
    }
    if (auto count = file.GetInt("imatrix.chunk_count")) info->chunk_count = *count;
    if (auto size = file.GetInt("imatrix.chunk_size")) info->chunk_size = *size;
  }
  CalibrationStats stats;
  auto floats = [&](const GgufTensorInfo& tensor) -> Result<std::vector<float>> {
    if (tensor.dtype != DType::kF32) {
      return InvalidInput(path + ": tensor " + tensor.name + " is " +
                          std::string(DTypeName(tensor.dtype)) + ", expected f32");
    }
    const TensorView view = file.View(tensor);
    std::vector<float> values(view.bytes / sizeof(float));
    std::memcpy(values.data(), view.data, values.size() * sizeof(float));
    for (float v : values) {
      if (!std::isfinite(v) || v < 0) {
        return InvalidInput(path + ": tensor " + tensor.name + " holds " + std::to_string(v) +
                            ", expected finite values >= 0");
      }
    }
    return values;
  };
  for (const GgufTensorInfo& tensor : file.tensors()) {
    if (!tensor.name.ends_with(kSum2)) continue;
    const std::string weight = tensor.name.substr(0, tensor.name.size() - kSum2.size());
    const GgufTensorInfo* counts = file.FindTensor(weight + std::string(kCounts));
    if (counts == nullptr) {
      return InvalidInput(path + ": tensor " + tensor.name + " has no " + weight +
                          std::string(kCounts) + " beside it");
    }
    const std::vector<float> sum2 = KITE_TRY(floats(tensor));
    const std::vector<float> count = KITE_TRY(floats(*counts));
    // One matrix per weight (experts of a 3-D weight, several rows, are not read here).
    if (count.size() != 1 || tensor.shape.empty() || tensor.shape.back() != int64_t(sum2.size())) {
      return InvalidInput(path + ": " + weight + " holds " + std::to_string(count.size()) +
                          " matrices (" + ShapeString(tensor.shape) + "), expected one");
    }
    LinearInputStats& linear = stats.linears[weight];
    linear.columns = static_cast<int64_t>(sum2.size());
    linear.sum_sq.assign(sum2.begin(), sum2.end());
    linear.rows_seen = static_cast<int64_t>(count[0]);
    stats.tokens = std::max(stats.tokens, linear.rows_seen);
  }
  return stats;
}

}  // namespace kite
