// SafetensorsModel: one model.safetensors, or the shards a model.safetensors.index.json lists.
#include <algorithm>
#include <filesystem>

#include "base/json_util.h"
#include "format/safetensors.h"

namespace kite {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr std::string_view kSingleFile = "model.safetensors";
constexpr std::string_view kIndexFile = "model.safetensors.index.json";

bool IsPlainFileName(std::string_view name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string_view::npos;
}

bool Exists(const fs::path& path) {
  std::error_code error;
  return fs::exists(path, error);
}

}  // namespace

Result<SafetensorsModel> SafetensorsModel::OpenFolder(const std::string& path) {
  std::error_code error;
  if (!fs::is_directory(path, error)) {
    if (path.ends_with(".json")) return FromIndex(path);
    std::vector<SafetensorsFile> shards;
    shards.push_back(KITE_TRY(SafetensorsFile::Open(path)));
    return FromShards(path, std::move(shards));
  }
  const fs::path single = fs::path(path) / kSingleFile;
  if (Exists(single)) {
    std::vector<SafetensorsFile> shards;
    shards.push_back(KITE_TRY(SafetensorsFile::Open(single.string())));
    return FromShards(path, std::move(shards));
  }
  const fs::path index = fs::path(path) / kIndexFile;
  if (Exists(index)) return FromIndex(index.string());
  return NotFound(path + ": holds neither " + std::string(kSingleFile) + " nor " +
                  std::string(kIndexFile) + " (Kite reads weights from safetensors only)");
}

Result<SafetensorsModel> SafetensorsModel::FromIndex(const std::string& index_path) {
  const std::string text = KITE_TRY(ReadTextFile(index_path, kConfigFileLimit));
  const json root = KITE_TRY(ParseJson(text, index_path, JsonDuplicateKeys::kReject));
  if (!root.is_object()) {
    return InvalidInput(index_path + ": expected a JSON object, got " +
                        std::string(JsonKind(root)));
  }
  auto weight_map = root.find("weight_map");
  if (weight_map == root.end()) return InvalidInput(index_path + ": missing field 'weight_map'");
  if (!weight_map->is_object()) {
    return InvalidInput(index_path + ": field 'weight_map': expected an object, got " +
                        std::string(JsonKind(*weight_map)));
  }
  if (weight_map->empty()) return InvalidInput(index_path + ": field 'weight_map' is empty");

  // Shard file name -> its position in `shards`, in name order.
  std::map<std::string, size_t, std::less<>> shard_index;
  for (const auto& [tensor, shard] : weight_map->items()) {
    if (!shard.is_string()) {
      return InvalidInput(index_path + ": weight_map entry '" + tensor +
                          "': expected a shard file name, got " + std::string(JsonKind(shard)));
    }
    const std::string& shard_name = shard.get_ref<const std::string&>();
    if (!IsPlainFileName(shard_name)) {
      return InvalidInput(index_path + ": weight_map entry '" + tensor + "': shard '" + shard_name +
                          "' is not a file name in the index's folder");
    }
    shard_index.emplace(shard_name, 0);
  }
  const fs::path folder = fs::path(index_path).parent_path();
  std::vector<SafetensorsFile> shards;
  for (auto& [shard_name, position] : shard_index) {
    position = shards.size();
    Result<SafetensorsFile> shard = SafetensorsFile::Open((folder / shard_name).string());
    if (!shard) {
      return std::unexpected(
          std::move(shard.error()).WithContext(index_path + ": shard '" + shard_name + "'"));
    }
    shards.push_back(std::move(*shard));
  }
  for (const auto& [tensor, shard] : weight_map->items()) {
    const std::string& shard_name = shard.get_ref<const std::string&>();
    if (!shards[shard_index.find(shard_name)->second].Find(tensor)) {
      return InvalidInput(index_path + ": weight_map puts tensor '" + tensor + "' in shard '" +
                          shard_name + "', which does not hold it");
    }
  }
  return FromShards(index_path, std::move(shards));
}

Result<SafetensorsModel> SafetensorsModel::FromShards(std::string path,
                                                      std::vector<SafetensorsFile> shards) {
  SafetensorsModel model;
  model.path_ = std::move(path);
  model.shards_ = std::move(shards);
  for (size_t shard = 0; shard < model.shards_.size(); ++shard) {
    for (const SafetensorsTensor& tensor : model.shards_[shard].tensors()) {
      model.entries_.push_back(Entry{shard, &tensor});
    }
  }
  std::sort(model.entries_.begin(), model.entries_.end(),
            [](const Entry& a, const Entry& b) { return a.tensor->name < b.tensor->name; });
  for (size_t i = 1; i < model.entries_.size(); ++i) {
    const Entry& previous = model.entries_[i - 1];
    const Entry& current = model.entries_[i];
    if (previous.tensor->name == current.tensor->name) {
      return InvalidInput(model.path_ + ": tensor '" + current.tensor->name + "' is in both " +
                          model.shards_[previous.shard].name() + " and " +
                          model.shards_[current.shard].name());
    }
  }
  return model;
}

const SafetensorsModel::Entry* SafetensorsModel::Find(std::string_view name) const {
  auto it = std::lower_bound(
      entries_.begin(), entries_.end(), name,
      [](const Entry& entry, std::string_view key) { return entry.tensor->name < key; });
  return it != entries_.end() && it->tensor->name == name ? &*it : nullptr;
}

Result<TensorView> SafetensorsModel::GetTensor(std::string_view name) const {
  const Entry* entry = Find(name);
  if (!entry) return NotFound(path_ + ": no tensor '" + std::string(name) + "'");
  return shards_[entry->shard].View(*entry->tensor);
}

}  // namespace kite
