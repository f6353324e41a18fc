#include "cli/inspect_report.h"

#include <filesystem>

#include "format/gguf.h"
#include "format/hf_config.h"
#include "models/hf_architectures.h"
#include "format/safetensors.h"
#include "tokenizer/tokenizer.h"

namespace kite::cli {

namespace {

Json ValueToJson(const GgufValue& value) {
  return std::visit(
      [](const auto& v) -> Json {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, GgufValue::Array>) {
          Json items = Json::array();
          const size_t shown = v.items.size() <= kMaxListedArrayItems ? v.items.size() : 8;
          for (size_t i = 0; i < shown; ++i) items.push_back(ValueToJson(v.items[i]));
          if (shown == v.items.size()) return items;
          return Json{{"element_type", GgufTypeName(v.element_type)},
                      {"length", v.items.size()},
                      {"head", items}};
        } else if constexpr (std::is_same_v<T, uint8_t> || std::is_same_v<T, int8_t>) {
          return static_cast<int>(v);
        } else {
          return v;
        }
      },
      value.value);
}

std::string TypeLabel(const GgufValue& value) {
  if (const auto* array = value.AsArray()) {
    return "array[" + std::string(GgufTypeName(array->element_type)) + "]";
  }
  return std::string(GgufTypeName(value.type()));
}

Json TensorJson(const std::string& name, std::string_view dtype, const std::vector<int64_t>& shape,
                uint64_t bytes) {
  return Json{{"name", name}, {"type", dtype}, {"shape", shape}, {"bytes", bytes}};
}

// Parameters are elements of every tensor; sizes are what the tensors occupy on disk.
void AddTotals(Json& report) {
  uint64_t parameters = 0, bytes = 0;
  for (const Json& tensor : report["tensors"]) {
    uint64_t elements = 1;
    for (int64_t dim : tensor["shape"]) elements *= static_cast<uint64_t>(dim);
    parameters += elements;
    bytes += tensor["bytes"].get<uint64_t>();
  }
  report["parameters"] = parameters;
  report["tensor_bytes"] = bytes;
}

Json TokenizerJson(const Result<std::unique_ptr<Tokenizer>>& tokenizer) {
  if (!tokenizer) return Json{{"error", tokenizer.error().message}};
  const TokenizerSummary summary = (*tokenizer)->Summary();
  Json json{{"kind", summary.kind},
            {"vocab_size", summary.vocab_size},
            {"pre_tokenizer", summary.pre_tokenizer},
            {"special_tokens", summary.special_token_count},
            {"add_bos", summary.add_bos}};
  const auto token = [&](int32_t id) -> Json {
    if (id < 0) return nullptr;
    return Json{{"id", id}, {"text", std::string((*tokenizer)->TokenText(id))}};
  };
  json["bos"] = token(summary.bos_id);
  Json eos = Json::array();
  for (int32_t id : summary.eos_ids) eos.push_back(token(id));
  json["eos"] = eos;
  json["unk"] = token(summary.unk_id);
  return json;
}

Result<Json> InspectGguf(const std::string& path) {
  GgufFile gguf = KITE_TRY(GgufFile::Open(path));
  Json report{{"path", path},
              {"format", "gguf"},
              {"gguf_version", gguf.version()},
              {"file_bytes", gguf.file_size()},
              {"alignment", gguf.alignment()}};
  auto architecture = gguf.GetString("general.architecture");
  report["architecture"] = architecture ? Json(*architecture) : Json(nullptr);
  Json metadata = Json::array();
  for (const auto& [key, value] : gguf.metadata()) {
    metadata.push_back(Json{{"key", key}, {"type", TypeLabel(value)}, {"value", ValueToJson(value)}});
  }
  report["metadata"] = metadata;
  Json tensors = Json::array();
  for (const GgufTensorInfo& info : gguf.tensors()) {
    tensors.push_back(TensorJson(info.name, DTypeName(info.dtype), info.shape, info.bytes));
  }
  report["tensors"] = tensors;
  AddTotals(report);
  const bool has_vocab = gguf.Find("tokenizer.ggml.model") != nullptr;
  report["tokenizer"] = has_vocab ? TokenizerJson(Tokenizer::FromGguf(gguf)) : Json(nullptr);
  auto chat_template = gguf.GetString("tokenizer.chat_template");
  report["chat_template"] = chat_template ? Json{{"present", true}, {"chars", chat_template->size()}}
                                          : Json{{"present", false}};
  return report;
}

Result<Json> InspectHfFolder(const std::string& path) {
  namespace fs = std::filesystem;
  HfConfig config = KITE_TRY(LoadHfConfig(path, CheckHfArchitecture));
  SafetensorsModel weights = KITE_TRY(SafetensorsModel::OpenFolder(path));
  Json report{{"path", path}, {"format", "hf-folder"}, {"architecture", config.architecture}};
  report["config"] = Json{{"vocab_size", config.vocab_size},
                          {"hidden_size", config.hidden_size},
                          {"intermediate_size", config.intermediate_size},
                          {"num_hidden_layers", config.num_hidden_layers},
                          {"num_attention_heads", config.num_attention_heads},
                          {"num_key_value_heads", config.num_key_value_heads},
                          {"head_dim", config.head_dim},
                          {"max_position_embeddings", config.max_position_embeddings},
                          {"rope_theta", config.rope_theta},
                          {"rope_scaling", config.rope_scaling.type},
                          {"tie_word_embeddings", config.tie_word_embeddings},
                          {"torch_dtype", config.torch_dtype}};
  Json shards = Json::array();
  for (const SafetensorsFile& shard : weights.shards()) {
    shards.push_back(fs::path(shard.name()).filename().string());
  }
  report["shards"] = shards;
  Json tensors = Json::array();
  for (const SafetensorsModel::Entry& entry : weights.tensors()) {
    const SafetensorsTensor& tensor = *entry.tensor;
    tensors.push_back(TensorJson(tensor.name, tensor.dtype_name, tensor.shape, tensor.end - tensor.begin));
  }
  report["tensors"] = tensors;
  AddTotals(report);
  auto tokenizer = Tokenizer::Load(path);
  report["tokenizer"] = TokenizerJson(tokenizer);
  const bool has_template = tokenizer && (*tokenizer)->Summary().has_chat_template;
  report["chat_template"] = Json{{"present", has_template}};
  return report;
}

}  // namespace

Result<Json> InspectModel(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code error;
  if (fs::is_directory(path, error)) return InspectHfFolder(path);
  if (!fs::exists(path, error)) return NotFound(path + ": no such file or folder");
  return InspectGguf(path);
}

}  // namespace kite::cli
