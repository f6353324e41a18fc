#include "quant/imatrix_file.h"

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
    std::memcpy(out->data(), bytes_.data() + at_, n * sizeof(float));
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
Result<ImatrixFile> ReadLegacy(std::span<const uint8_t> bytes, const std::string& path) {
  LegacyReader in(bytes, path);
  ImatrixFile file;
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
    LinearInputStats& stats = file.stats.linears[name];
    stats.columns = nval;
    stats.rows_seen = ncall;  // the values are the means times ncall
    stats.sum_sq.assign(values.begin(), values.end());
  }
  if (!in.done()) {
    file.chunk_count = KITE_TRY(in.Get<int32_t>("the chunk count"));
    if (!in.done()) {
      const int32_t length = KITE_TRY(in.Get<int32_t>("the dataset name length"));
      file.datasets.push_back(KITE_TRY(in.String(length, "the dataset name")));
    }
  }
  return file;
}

Result<std::vector<float>> FloatsOf(const GgufFile& gguf, const GgufTensorInfo& info) {
  if (info.dtype != DType::kF32) {
    return InvalidInput(gguf.name() + ": tensor '" + info.name + "' is " +
                        std::string(DTypeName(info.dtype)) + ", expected f32");
  }
  const TensorView view = gguf.View(info);
  std::vector<float> values(info.bytes / sizeof(float));
  std::memcpy(values.data(), view.data, info.bytes);
  return values;
}

Result<ImatrixFile> ReadGgufImatrix(const std::string& path) {
  const GgufFile gguf = KITE_TRY(GgufFile::Open(path));
  auto type = gguf.GetString("general.type");
  if (!type || *type != "imatrix") {
    return InvalidInput(path + ": not an imatrix file (general.type is not \"imatrix\")");
  }
  ImatrixFile file;
  if (auto datasets = gguf.GetArray("imatrix.datasets"); datasets) {
    for (const GgufValue& item : (*datasets)->items) {
      if (const std::string* text = item.AsString()) file.datasets.push_back(*text);
    }
  }
  if (auto count = gguf.GetInt("imatrix.chunk_count"); count)
    file.chunk_count = static_cast<int32_t>(*count);
  if (auto size = gguf.GetInt("imatrix.chunk_size"); size)
    file.chunk_size = static_cast<int32_t>(*size);
  for (const GgufTensorInfo& info : gguf.tensors()) {
    if (!info.name.ends_with(kSum2)) continue;
    const std::string weight = info.name.substr(0, info.name.size() - kSum2.size());
    const GgufTensorInfo* counts = gguf.FindTensor(weight + std::string(kCounts));
    if (counts == nullptr) {
      return InvalidInput(path + ": '" + info.name + "' has no '" + weight + std::string(kCounts) +
                          "' beside it");
    }
    const int64_t matrices = info.shape.size() == 2 ? info.shape[0] : 1;
    if (matrices != 1) {
      return InvalidInput(path + ": '" + info.name + "' holds " + std::to_string(matrices) +
                          " matrices (a mixture of experts); Kite's models have one");
    }
    const std::vector<float> sums = KITE_TRY(FloatsOf(gguf, info));
    const std::vector<float> count = KITE_TRY(FloatsOf(gguf, *counts));
    if (count.size() != 1 || !(count[0] >= 0)) {
      return InvalidInput(path + ": '" + counts->name + "' should hold one count >= 0");
    }
    LinearInputStats& stats = file.stats.linears[weight];
    stats.columns = static_cast<int64_t>(sums.size());
    stats.rows_seen = static_cast<int64_t>(count[0]);
    stats.sum_sq.assign(sums.begin(), sums.end());
  }
  if (file.stats.linears.empty()) return InvalidInput(path + ": the imatrix holds no entries");
  return file;
}

}  // namespace

Result<ImatrixFile> ReadImatrix(const std::string& path) {
  const MappedFile mapped = KITE_TRY(MappedFile::Open(path));
  const std::span<const uint8_t> bytes = mapped.bytes();
  if (bytes.size() >= 4 && std::memcmp(bytes.data(), "GGUF", 4) == 0) return ReadGgufImatrix(path);
  return ReadLegacy(bytes, path);
}

Status WriteImatrix(const ImatrixFile& imatrix, const std::string& path,
                    const std::vector<std::string>& inputs) {
  GgufWriter writer;
  writer.SetString("general.type", "imatrix");
  writer.SetStringArray("imatrix.datasets", imatrix.datasets);
  writer.SetUint32("imatrix.chunk_count", static_cast<uint32_t>(imatrix.chunk_count));
  writer.SetUint32("imatrix.chunk_size", static_cast<uint32_t>(imatrix.chunk_size));
  // The float data must live until Write returns: one buffer per tensor.
  std::vector<std::vector<float>> data;
  data.reserve(imatrix.stats.linears.size() * 2);
  for (const auto& [name, stats] : imatrix.stats.linears) {  // std::map: sorted by name
    if (static_cast<int64_t>(stats.sum_sq.size()) != stats.columns || stats.columns <= 0) {
      return InvalidInput(path + ": entry '" + name + "' has " +
                          std::to_string(stats.sum_sq.size()) + " sums for " +
                          std::to_string(stats.columns) + " columns");
    }
    const std::vector<float>& sums = data.emplace_back(stats.sum_sq.begin(), stats.sum_sq.end());
    KITE_RETURN_IF_ERROR(writer.AddTensor(
        name + std::string(kSum2), DType::kF32, {1, stats.columns},
        {reinterpret_cast<const uint8_t*>(sums.data()), sums.size() * sizeof(float)}));
    const std::vector<float>& count = data.emplace_back(1, static_cast<float>(stats.rows_seen));
    KITE_RETURN_IF_ERROR(
        writer.AddTensor(name + std::string(kCounts), DType::kF32, {1, 1},
                         {reinterpret_cast<const uint8_t*>(count.data()), sizeof(float)}));
  }
  return writer.Write(path, inputs);
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
