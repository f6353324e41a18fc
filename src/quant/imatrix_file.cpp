#include "quant/imatrix_file.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/mapped_file.h"
#include "format/gguf.h"

namespace kite {

namespace {

constexpr std::string_view kSum2 = ".in_sum2";
constexpr std::string_view kCounts = ".counts";

// Reads little-endian values from the legacy file, naming the file and position in errors.
class LegacyReader {
 public:
  LegacyReader(std::span<const uint8_t> bytes, const std::string& path)
      : bytes_(bytes), path_(path) {}
  template <typename T>
  Result<T> Get(const char* what) {
    if (bytes_.size() - at_ < sizeof(T)) return Truncated(what);
    T value;
    std::memcpy(&value, bytes_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return value;
  }
  Result<std::string> String(int32_t size, const char* what) {
    if (size < 0 || bytes_.size() - at_ < static_cast<size_t>(size)) return Truncated(what);
    std::string text(reinterpret_cast<const char*>(bytes_.data() + at_), size);
    at_ += size;
    return text;
  }
  Status Floats(std::vector<float>* out, int32_t n, const char* what) {
    if (n < 0 || (bytes_.size() - at_) / sizeof(float) < static_cast<size_t>(n)) {
      return Truncated(what);
    }
    out->resize(n);
    if (n > 0) std::memcpy(out->data(), bytes_.data() + at_, n * sizeof(float));  // no null src
    at_ += n * sizeof(float);
    return Ok();
  }
  bool done() const { return at_ == bytes_.size(); }

 private:
  std::unexpected<Error> Truncated(const char* what) const {
    return InvalidInput(path_ + ": legacy imatrix ends inside " + what + " at byte " +
                        std::to_string(at_));
  }
  std::span<const uint8_t> bytes_;
  const std::string& path_;
  size_t at_ = 0;
};

// The legacy .dat: int32 entries; per entry int32 name length, name, int32 ncall, int32 nval,
// nval floats (Σx²/tokens x ncall); then optionally int32 chunk count, int32 length, dataset.
Result<CalibrationStats> ReadLegacy(std::span<const uint8_t> bytes, const std::string& path,
                                    ImatrixInfo* info) {
  LegacyReader in(bytes, path);
  CalibrationStats stats;
  ImatrixInfo read_info;
  const int32_t entries = KITE_TRY(in.Get<int32_t>("the entry count"));
  if (entries <= 0) return InvalidInput(path + ": not an imatrix file (no entries)");
  for (int32_t i = 0; i < entries; ++i) {
    const int32_t length = KITE_TRY(in.Get<int32_t>("a name length"));
    const std::string name = KITE_TRY(in.String(length, "a name"));
    const int32_t ncall = KITE_TRY(in.Get<int32_t>("a call count"));
    const int32_t nval = KITE_TRY(in.Get<int32_t>("a value count"));
    std::vector<float> values;
    KITE_RETURN_IF_ERROR(in.Floats(&values, nval, "the values"));
    if (ncall <= 0 || nval <= 0) {
      return InvalidInput(path + ": entry '" + name + "' has " + std::to_string(ncall) +
                          " calls and " + std::to_string(nval) + " values (expected > 0)");
    }
    for (int32_t j = 0; j < nval; ++j) {
      if (!std::isfinite(values[j]) || values[j] < 0) {
        return InvalidInput(path + ": entry '" + name + "' has " + std::to_string(values[j]) +
                            " at column " + std::to_string(j) +
                            " (a sum of squares is finite and >= 0)");
      }
    }
    LinearInputStats& linear = stats.linears[name];
    linear.columns = nval;
    linear.rows_seen = ncall;  // the values are the means times ncall
    linear.sum_sq.assign(values.begin(), values.end());
  }
  if (!in.done()) {
    read_info.chunk_count = static_cast<uint32_t>(KITE_TRY(in.Get<int32_t>("the chunk count")));
    if (!in.done()) {
      const int32_t length = KITE_TRY(in.Get<int32_t>("the dataset name length"));
      read_info.datasets.push_back(KITE_TRY(in.String(length, "the dataset name")));
    }
  }
  if (info != nullptr) *info = std::move(read_info);
  return stats;
}

Result<std::vector<float>> FloatsOf(const GgufFile& gguf, const GgufTensorInfo& tensor) {
  if (tensor.dtype != DType::kF32) {
    return InvalidInput(gguf.name() + ": tensor " + tensor.name + " is " +
                        std::string(DTypeName(tensor.dtype)) + ", expected f32");
  }
  const TensorView view = gguf.View(tensor);
  std::vector<float> values(tensor.bytes / sizeof(float));
  std::memcpy(values.data(), view.data, values.size() * sizeof(float));
  for (float v : values) {
    if (!std::isfinite(v) || v < 0) {
      return InvalidInput(gguf.name() + ": tensor " + tensor.name + " holds " + std::to_string(v) +
                          ", expected finite values >= 0");
    }
  }
  return values;
}

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
    if (static_cast<int64_t>(linear.sum_sq.size()) != linear.columns) {
      return InvalidInput(path + ": entry '" + name + "' has " +
                          std::to_string(linear.sum_sq.size()) + " sums for " +
                          std::to_string(linear.columns) + " columns");
    }
    const std::vector<float>& sum2 = data.emplace_back(linear.sum_sq.begin(), linear.sum_sq.end());
    const std::vector<float>& counts = data.emplace_back(1, static_cast<float>(linear.rows_seen));
    KITE_RETURN_IF_ERROR(
        writer.AddTensor(name + std::string(kSum2), DType::kF32, {1, linear.columns}, Bytes(sum2)));
    KITE_RETURN_IF_ERROR(
        writer.AddTensor(name + std::string(kCounts), DType::kF32, {1, 1}, Bytes(counts)));
  }
  return writer.Write(path, inputs);
}

Result<CalibrationStats> ReadImatrixGguf(const std::string& path, ImatrixInfo* info) {
  const GgufFile gguf = KITE_TRY(GgufFile::Open(path));
  if (auto type = gguf.GetString("general.type"); !type || *type != "imatrix") {
    return InvalidInput(path + ": general.type is not \"imatrix\": not an importance matrix");
  }
  if (info != nullptr) {
    *info = {};
    if (auto datasets = gguf.GetArray("imatrix.datasets")) {
      for (const GgufValue& item : (*datasets)->items) {
        if (const std::string* text = item.AsString()) info->datasets.push_back(*text);
      }
    }
    if (auto count = gguf.GetInt("imatrix.chunk_count")) info->chunk_count = *count;
    if (auto size = gguf.GetInt("imatrix.chunk_size")) info->chunk_size = *size;
  }
  CalibrationStats stats;
  for (const GgufTensorInfo& tensor : gguf.tensors()) {
    if (!tensor.name.ends_with(kSum2)) continue;
    const std::string weight = tensor.name.substr(0, tensor.name.size() - kSum2.size());
    const GgufTensorInfo* counts = gguf.FindTensor(weight + std::string(kCounts));
    if (counts == nullptr) {
      return InvalidInput(path + ": tensor " + tensor.name + " has no " + weight +
                          std::string(kCounts) + " beside it");
    }
    const std::vector<float> sum2 = KITE_TRY(FloatsOf(gguf, tensor));
    const std::vector<float> count = KITE_TRY(FloatsOf(gguf, *counts));
    // One matrix per weight (experts of a 3-D weight, several rows, are not read here).
    if (count.size() != 1 || tensor.shape.back() != static_cast<int64_t>(sum2.size())) {
      return InvalidInput(path + ": " + weight + " holds " + std::to_string(count.size()) +
                          " matrices (" + ShapeString(tensor.shape) +
                          "), expected one (a mixture of experts; Kite's models have none)");
    }
    LinearInputStats& linear = stats.linears[weight];
    linear.columns = static_cast<int64_t>(sum2.size());
    linear.sum_sq.assign(sum2.begin(), sum2.end());
    linear.rows_seen = static_cast<int64_t>(count[0]);
    stats.tokens = std::max(stats.tokens, linear.rows_seen);
  }
  return stats;
}

Result<CalibrationStats> ReadImatrix(const std::string& path, ImatrixInfo* info) {
  const MappedFile mapped = KITE_TRY(MappedFile::Open(path));
  const std::span<const uint8_t> bytes = mapped.bytes();
  if (bytes.size() >= 4 && std::memcmp(bytes.data(), "GGUF", 4) == 0) {
    return ReadImatrixGguf(path, info);
  }
  return ReadLegacy(bytes, path, info);
}

std::vector<float> ImportanceOf(const LinearInputStats& stats) {
  std::vector<float> importance(stats.sum_sq.size(), 1.0f);
  if (stats.rows_seen <= 0) return importance;
  for (size_t j = 0; j < importance.size(); ++j) {
    importance[j] = static_cast<float>(stats.sum_sq[j] / static_cast<double>(stats.rows_seen));
  }
  return importance;
}

}  // namespace kite
