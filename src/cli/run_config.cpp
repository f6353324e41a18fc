#include "cli/run_config.h"

#include <filesystem>
#include <functional>
#include <map>

#include "base/mapped_file.h"
#include "format/json_util.h"
#include "graph/kv_cache.h"

namespace kite::cli {

namespace {

using nlohmann::json;
// Each known key and how to store its value; anything else in the file is an error.
using Setter = std::function<Status(const json&, const std::string& where)>;

std::unexpected<Error> WrongType(const std::string& where, const json& value, const char* expected) {
  return InvalidInput(where + ": expected " + expected + ", found " + std::string(JsonKind(value)));
}

Setter IntField(int32_t* target, int64_t min_value) {
  return [=](const json& value, const std::string& where) -> Status {
    const auto number = JsonInt(value);
    if (!number) return WrongType(where, value, "an integer");
    if (*number < min_value || *number > INT32_MAX) {
      return InvalidInput(where + ": " + std::to_string(*number) + " is out of range (at least " +
                          std::to_string(min_value) + ")");
    }
    *target = static_cast<int32_t>(*number);
    return Ok();
  };
}

Setter FloatField(float* target) {
  return [=](const json& value, const std::string& where) -> Status {
    if (!value.is_number()) return WrongType(where, value, "a number");
    *target = value.get<float>();
    return Ok();
  };
}

Setter StringField(std::string* target) {
  return [=](const json& value, const std::string& where) -> Status {
    if (!value.is_string()) return WrongType(where, value, "a string");
    *target = value.get<std::string>();
    return Ok();
  };
}

Status ApplyObject(const json& object, const std::string& where,
                   const std::map<std::string, Setter>& fields) {
  if (!object.is_object()) return WrongType(where, object, "an object");
  for (const auto& [key, value] : object.items()) {
    const auto field = fields.find(key);
    if (field == fields.end()) {
      std::string known;
      for (const auto& [name, setter] : fields) known += (known.empty() ? "" : ", ") + name;
      return InvalidInput(where + ": unknown key \"" + key + "\" (known: " + known + ")");
    }
    KITE_RETURN_IF_ERROR(field->second(value, where + "." + key));
  }
  return Ok();
}

}  // namespace

Status ApplyRunConfigFile(const std::string& path, RunConfig* config) {
  const std::string text = KITE_TRY(ReadTextFile(path));
  const json root = KITE_TRY(ParseJson(text, path));
  SamplerConfig& sampler = config->sampler;
  const std::map<std::string, Setter> sampler_fields = {
      {"temp", FloatField(&sampler.temperature)},
      {"top_k", IntField(&sampler.top_k, 0)},
      {"top_p", FloatField(&sampler.top_p)},
      {"min_p", FloatField(&sampler.min_p)},
      {"repeat_penalty", FloatField(&sampler.repeat_penalty)},
      {"repeat_last_n", IntField(&sampler.penalty_last_n, -1)},
      {"presence_penalty", FloatField(&sampler.presence_penalty)},
      {"frequency_penalty", FloatField(&sampler.frequency_penalty)},
      {"seed",
       [&](const json& value, const std::string& where) -> Status {
         const auto seed = JsonInt(value);
         if (!seed || *seed < 0) return WrongType(where, value, "a non-negative integer");
         sampler.seed = static_cast<uint64_t>(*seed);
         return Ok();
       }},
  };
  const std::string folder = std::filesystem::path(path).parent_path().string();
  const std::map<std::string, Setter> fields = {
      {"model",
       [&](const json& value, const std::string& where) -> Status {
         KITE_RETURN_IF_ERROR(StringField(&config->model)(value, where));
         if (std::filesystem::path(config->model).is_relative() && !folder.empty()) {
           config->model = (std::filesystem::path(folder) / config->model).string();
         }
         return Ok();
       }},
      {"context", IntField(&config->context, 0)},
      {"prefill_chunk", IntField(&config->prefill_chunk, 1)},
      {"backend", StringField(&config->backend)},
      {"threads", IntField(&config->threads, 0)},
      {"kv_type",
       [&](const json& value, const std::string& where) -> Status {
         if (!value.is_string()) return WrongType(where, value, ("one of " + KvCacheTypeNames()).c_str());
         const std::string name = value.get<std::string>();
         const std::optional<DType> kv_type = ParseKvCacheType(name);
         if (!kv_type) {
           return InvalidInput(where + ": \"" + name + "\" is not a KV cache type (" +
                               KvCacheTypeNames() + ")");
         }
         config->kv_type = *kv_type;
         return Ok();
       }},
      {"n_predict", IntField(&config->n_predict, 0)},
      {"chat_template", StringField(&config->chat_template)},
      {"stop",
       [&](const json& value, const std::string& where) -> Status {
         if (!value.is_array()) return WrongType(where, value, "an array of strings");
         config->stop.clear();
         for (size_t i = 0; i < value.size(); ++i) {
           if (!value[i].is_string() || value[i].get<std::string>().empty()) {
             return InvalidInput(where + "[" + std::to_string(i) + "]: expected a non-empty string");
           }
           config->stop.push_back(value[i].get<std::string>());
         }
         return Ok();
       }},
      {"sampler",
       [&](const json& value, const std::string& where) {
         return ApplyObject(value, where, sampler_fields);
       }},
  };
  return ApplyObject(root, path, fields);
}

}  // namespace kite::cli
