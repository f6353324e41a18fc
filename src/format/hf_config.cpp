#include "format/hf_config.h"

#include <cmath>
#include <filesystem>
#include <limits>

#include "base/json_util.h"
#include "base/mapped_file.h"

namespace kite {

namespace {

using nlohmann::json;

// Sizes above this are nonsense for a config and would overflow products taken later.
constexpr int64_t kMaxSize = std::numeric_limits<int32_t>::max();

// Typed access to the fields of one JSON object; messages name the file and the field, with
// `prefix` for nested objects ("rope_scaling."). A field set to null reads as absent.
class Fields {
 public:
  Fields(const json& object, const std::string& path, std::string prefix = "")
      : object_(object), path_(path), prefix_(std::move(prefix)) {}

  const json* Get(std::string_view key) const {
    auto it = object_.find(key);
    return it == object_.end() || it->is_null() ? nullptr : &*it;
  }

  std::unexpected<Error> Missing(std::string_view key) const {
    return InvalidInput(path_ + ": missing required field '" + Name(key) + "'");
  }
  std::unexpected<Error> WrongType(std::string_view key, std::string_view expected,
                                   const json& value) const {
    return InvalidInput(path_ + ": field '" + Name(key) + "': expected " + std::string(expected) +
                        ", got " + std::string(JsonKind(value)));
  }
  std::unexpected<Error> BadValue(std::string_view key, const std::string& problem) const {
    return InvalidInput(path_ + ": field '" + Name(key) + "' " + problem);
  }

  Result<std::optional<int64_t>> OptionalInt(std::string_view key) const {
    const json* value = Get(key);
    if (!value) return std::nullopt;
    std::optional<int64_t> number = JsonInt(*value);
    if (!number) return WrongType(key, "an integer", *value);
    return number;
  }

  // An integer in [1, kMaxSize]; `fallback` when absent, or an error when there is none.
  Result<int64_t> Size(std::string_view key, std::optional<int64_t> fallback = {}) const {
    std::optional<int64_t> value = KITE_TRY(OptionalInt(key));
    if (!value) {
      if (!fallback) return Missing(key);
      return *fallback;
    }
    if (*value < 1 || *value > kMaxSize) {
      return BadValue(key, "is " + std::to_string(*value) + ", expected an integer from 1 to " +
                               std::to_string(kMaxSize));
    }
    return *value;
  }

  // A finite number > 0 (integers accepted); `fallback` when absent, or an error.
  Result<double> Positive(std::string_view key, std::optional<double> fallback = {}) const {
    const json* value = Get(key);
    if (!value) {
      if (!fallback) return Missing(key);
      return *fallback;
    }
    if (!value->is_number()) return WrongType(key, "a number", *value);
    const double number = value->get<double>();
    if (!(number > 0) || !std::isfinite(static_cast<float>(number))) {
      return BadValue(key, "is " + value->dump() + ", expected a positive number");
    }
    return number;
  }

  Result<std::optional<bool>> OptionalBool(std::string_view key) const {
    const json* value = Get(key);
    if (!value) return std::nullopt;
    if (!value->is_boolean()) return WrongType(key, "a boolean", *value);
    return value->get<bool>();
  }
  Result<bool> Bool(std::string_view key, bool fallback) const {
    return KITE_TRY(OptionalBool(key)).value_or(fallback);
  }

  Result<std::optional<std::string>> String(std::string_view key) const {
    const json* value = Get(key);
    if (!value) return std::nullopt;
    if (!value->is_string()) return WrongType(key, "a string", *value);
    return value->get<std::string>();
  }

  // A non-empty list of finite numbers > 0.
  Result<std::vector<double>> PositiveList(std::string_view key) const {
    const json* value = Get(key);
    if (!value) return Missing(key);
    if (!value->is_array() || value->empty()) return WrongType(key, "a non-empty list", *value);
    std::vector<double> numbers;
    for (const json& item : *value) {
      if (!item.is_number() || !(item.get<double>() > 0) || !std::isfinite(item.get<double>())) {
        return BadValue(key, "holds " + item.dump() + ", expected positive numbers");
      }
      numbers.push_back(item.get<double>());
    }
    return numbers;
  }

  // A list of strings; empty when absent.
  Result<std::vector<std::string>> Strings(std::string_view key) const {
    const json* value = Get(key);
    std::vector<std::string> strings;
    if (!value) return strings;
    if (!value->is_array()) return WrongType(key, "a list of strings", *value);
    for (const json& item : *value) {
      if (!item.is_string()) return BadValue(key, "holds " + item.dump() + ", expected strings");
      strings.push_back(item.get<std::string>());
    }
    return strings;
  }

  Result<std::optional<double>> OptionalPositive(std::string_view key) const {
    if (!Get(key)) return std::optional<double>();
    return std::optional<double>(KITE_TRY(Positive(key)));
  }

  // A token id or a list of them; empty when absent.
  Result<std::vector<int64_t>> TokenIds(std::string_view key) const {
    const json* value = Get(key);
    std::vector<int64_t> ids;
    if (!value) return ids;
    if (!value->is_array()) {
      std::optional<int64_t> id = JsonInt(*value);
      if (!id || *id < 0) return WrongType(key, "a non-negative integer or a list of them", *value);
      ids.push_back(*id);
      return ids;
    }
    for (const json& item : *value) {
      std::optional<int64_t> id = JsonInt(item);
      if (!id || *id < 0) {
        return BadValue(key, "holds " + std::string(JsonKind(item)) + " " + item.dump() +
                                 ", expected non-negative integers");
      }
      ids.push_back(*id);
    }
    return ids;
  }

 private:
  std::string Name(std::string_view key) const { return prefix_ + std::string(key); }

  const json& object_;
  const std::string& path_;
  std::string prefix_;
};

Result<std::string> ReadArchitecture(const Fields& fields) {
  const json* list = fields.Get("architectures");
  if (!list) return fields.Missing("architectures");
  if (!list->is_array() || list->empty() || !(*list)[0].is_string()) {
    return fields.WrongType("architectures", "a non-empty list of strings", *list);
  }
  return (*list)[0].get<std::string>();
}

Result<HfRopeScaling> ReadRopeScaling(const Fields& config, const std::string& path) {
  HfRopeScaling scaling;
  const json* value = config.Get("rope_scaling");
  if (!value) return scaling;
  if (!value->is_object()) return config.WrongType("rope_scaling", "an object or null", *value);
  const Fields fields(*value, path, "rope_scaling.");
  // transformers reads "rope_type" and falls back to the older "type".
  std::optional<std::string> type = KITE_TRY(fields.String("rope_type"));
  if (!type) type = KITE_TRY(fields.String("type"));
  if (!type) return fields.Missing("rope_type");
  if (*type == "default") return scaling;
  if (*type == "su") *type = "longrope";
  if (*type != "linear" && *type != "llama3" && *type != "longrope") {
    return Unsupported(path + ": rope_scaling type '" + *type +
                       "' is not supported (supported: none, linear, llama3, longrope)");
  }
  scaling.type = *type;
  if (scaling.type == "longrope") {
    scaling.short_factor = KITE_TRY(fields.PositiveList("short_factor"));
    scaling.long_factor = KITE_TRY(fields.PositiveList("long_factor"));
    if (scaling.short_factor.size() != scaling.long_factor.size()) {
      return fields.BadValue("long_factor", "has " + std::to_string(scaling.long_factor.size()) +
                                                " entries, short_factor " +
                                                std::to_string(scaling.short_factor.size()));
    }
    if (fields.Get("original_max_position_embeddings")) {
      scaling.original_max_position_embeddings =
          KITE_TRY(fields.Size("original_max_position_embeddings"));
    }
    return scaling;
  }
  scaling.factor = static_cast<float>(KITE_TRY(fields.Positive("factor")));
  if (scaling.type == "llama3") {
    scaling.low_freq_factor = static_cast<float>(KITE_TRY(fields.Positive("low_freq_factor")));
    scaling.high_freq_factor = static_cast<float>(KITE_TRY(fields.Positive("high_freq_factor")));
    scaling.original_max_position_embeddings =
        KITE_TRY(fields.Size("original_max_position_embeddings"));
    // The blend between the two frequency bands divides by their difference.
    if (!(scaling.low_freq_factor < scaling.high_freq_factor)) {
      return fields.BadValue("low_freq_factor", "(" + std::to_string(scaling.low_freq_factor) +
                                                    ") must be below high_freq_factor (" +
                                                    std::to_string(scaling.high_freq_factor) + ")");
    }
  }
  return scaling;
}

}  // namespace

Result<HfConfig> ParseHfConfig(std::string_view json_text, const std::string& path,
                               const HfArchitectureCheck& check_architecture) {
  const json root = KITE_TRY(ParseJson(json_text, path));
  if (!root.is_object()) {
    return InvalidInput(path + ": expected a JSON object, got " + std::string(JsonKind(root)));
  }
  const Fields fields(root, path);
  HfConfig config;
  config.path = path;
  config.architecture = KITE_TRY(ReadArchitecture(fields));
  if (check_architecture) KITE_RETURN_IF_ERROR(check_architecture(config.architecture, path));

  config.vocab_size = KITE_TRY(fields.Size("vocab_size"));
  config.hidden_size = KITE_TRY(fields.Size("hidden_size"));
  config.intermediate_size = KITE_TRY(fields.Size("intermediate_size"));
  config.num_hidden_layers = KITE_TRY(fields.Size("num_hidden_layers"));
  config.num_attention_heads = KITE_TRY(fields.Size("num_attention_heads"));
  config.num_key_value_heads =
      KITE_TRY(fields.Size("num_key_value_heads", config.num_attention_heads));
  if (config.num_attention_heads % config.num_key_value_heads != 0) {
    return fields.BadValue("num_key_value_heads", "(" + std::to_string(config.num_key_value_heads) +
                                                      ") does not divide num_attention_heads (" +
                                                      std::to_string(config.num_attention_heads) +
                                                      ")");
  }
  if (fields.Get("head_dim")) {
    config.head_dim = KITE_TRY(fields.Size("head_dim"));
  } else if (config.hidden_size % config.num_attention_heads != 0) {
    return fields.BadValue("num_attention_heads", "(" + std::to_string(config.num_attention_heads) +
                                                      ") does not divide hidden_size (" +
                                                      std::to_string(config.hidden_size) +
                                                      ") and head_dim is absent");
  } else {
    config.head_dim = config.hidden_size / config.num_attention_heads;
  }
  config.max_position_embeddings = KITE_TRY(fields.Size("max_position_embeddings"));
  config.rms_norm_eps = KITE_TRY(fields.Positive("rms_norm_eps"));
  config.rope_theta = KITE_TRY(fields.Positive("rope_theta", 10000.0));
  config.rope_scaling = KITE_TRY(ReadRopeScaling(fields, path));
  config.tie_word_embeddings = KITE_TRY(fields.Bool("tie_word_embeddings", false));

  config.attention_bias = KITE_TRY(fields.OptionalBool("attention_bias"));
  config.mlp_bias = KITE_TRY(fields.OptionalBool("mlp_bias"));
  config.use_sliding_window = KITE_TRY(fields.OptionalBool("use_sliding_window"));
  if (fields.Get("sliding_window")) config.sliding_window = KITE_TRY(fields.Size("sliding_window"));
  if (std::optional<std::string> act = KITE_TRY(fields.String("hidden_act"))) {
    config.hidden_act = *act;
  }
  if (std::optional<std::string> act = KITE_TRY(fields.String("hidden_activation"))) {
    config.hidden_act = *act;
  }
  config.query_pre_attn_scalar = KITE_TRY(fields.OptionalPositive("query_pre_attn_scalar"));
  config.attn_logit_softcapping = KITE_TRY(fields.OptionalPositive("attn_logit_softcapping"));
  config.final_logit_softcapping = KITE_TRY(fields.OptionalPositive("final_logit_softcapping"));
  if (fields.Get("sliding_window_pattern")) {
    config.sliding_window_pattern = KITE_TRY(fields.Size("sliding_window_pattern"));
  }
  config.layer_types = KITE_TRY(fields.Strings("layer_types"));
  config.rope_local_base_freq = KITE_TRY(fields.OptionalPositive("rope_local_base_freq"));
  config.partial_rotary_factor = KITE_TRY(fields.Positive("partial_rotary_factor", 1.0));
  if (config.partial_rotary_factor > 1.0) {
    return fields.BadValue("partial_rotary_factor",
                           "is " + std::to_string(config.partial_rotary_factor) +
                               ", expected a share of head_dim up to 1");
  }
  if (fields.Get("original_max_position_embeddings")) {
    config.original_max_position_embeddings =
        KITE_TRY(fields.Size("original_max_position_embeddings"));
  }

  config.bos_token_ids = KITE_TRY(fields.TokenIds("bos_token_id"));
  config.eos_token_ids = KITE_TRY(fields.TokenIds("eos_token_id"));
  std::optional<std::string> dtype = KITE_TRY(fields.String("torch_dtype"));
  if (!dtype) dtype = KITE_TRY(fields.String("dtype"));
  config.torch_dtype = dtype.value_or("");
  return config;
}

Result<HfConfig> LoadHfConfig(const std::string& folder_or_file,
                              const HfArchitectureCheck& check_architecture) {
  std::error_code error;
  const std::string path = std::filesystem::is_directory(folder_or_file, error)
                               ? (std::filesystem::path(folder_or_file) / "config.json").string()
                               : folder_or_file;
  const std::string text = KITE_TRY(ReadTextFile(path, kConfigFileLimit));
  return ParseHfConfig(text, path, check_architecture);
}

}  // namespace kite
