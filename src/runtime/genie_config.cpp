#include "runtime/genie_config.h"

#include <filesystem>
#include <map>

#include "base/json_util.h"
#include "runtime/run_config.h"

namespace kite {

namespace {

using nlohmann::json;

// Genie's field (below "dialog") -> the table's key.
const std::map<std::string, std::string>& GenieToKite() {
  static const std::map<std::string, std::string> fields = {
      {"context.size", "context"},
      {"sampler.seed", "sampler.seed"},
      {"sampler.temp", "sampler.temp"},
      {"sampler.top-k", "sampler.top_k"},
      {"sampler.top-p", "sampler.top_p"},
      {"sampler.token-penalty.penalize-last-n", "sampler.repeat_last_n"},
      {"sampler.token-penalty.repetition-penalty", "sampler.repeat_penalty"},
      {"sampler.token-penalty.presence-penalty", "sampler.presence_penalty"},
      {"sampler.token-penalty.frequency-penalty", "sampler.frequency_penalty"},
      {"engine.n-threads", "threads"},
      {"stop-sequence", "stop"},
      {"max-num-tokens", "n_predict"},
  };
  return fields;
}

struct GenieReader {
  const std::string& path;
  RunSettings* settings;
  std::vector<std::string>* warnings;
  bool greedy = false;

  void NotUsed(const std::string& field) {
    warnings->push_back(path + ": dialog." + field + ": not used by Kite");
  }

  Status Visit(const json& value, const std::string& field) {
    const std::string name = "dialog." + field;
    // Schema versions say how to read the file, which Kite already knows.
    if (field == "version" || field.ends_with(".version")) return Ok();
    if (const auto mapped = GenieToKite().find(field); mapped != GenieToKite().end()) {
      const Setting& setting = *FindSetting(mapped->second);
      setting.store(*settings, KITE_TRY(ParseSettingJson(setting, path, name, value, warnings)));
      return Ok();
    }
    if (field == "type") {
      if (!value.is_string()) return InvalidInput(path + ": \"" + name + "\": expected a string");
      const std::string type = value.get<std::string>();
      // Genie's speculative dialogs: "spd" drafts with a smaller model (Kite takes it from
      // --draft), "lade" (lookahead decoding) guesses n-grams from the text, as Kite's prompt
      // lookup does. Their own fields are named as not used, like any other.
      if (type == "spd") {
        settings->speculative.mode = "draft";
      } else if (type == "lade") {
        settings->speculative.mode = "ngram";
      } else if (type != "basic") {
        NotUsed(field + " \"" + type + "\"");
      }
      return Ok();
    }
    if (field == "sampler.greedy") {
      if (!value.is_boolean()) {
        return InvalidInput(path + ": \"" + name + "\" = " + value.dump() + ": expected true or false");
      }
      greedy = value.get<bool>();
      return Ok();
    }
    if (field == "tokenizer.path") {
      if (!value.is_string()) {
        return InvalidInput(path + ": \"" + name + "\" = " + value.dump() + ": expected a string");
      }
      // Kite reads the tokenizer with the weights, from the model's folder (or .gguf).
      const std::string tokenizer = PathFromConfig(path, value.get<std::string>());
      const bool model_itself = tokenizer.ends_with(".gguf") || std::filesystem::is_directory(tokenizer);
      settings->model = model_itself ? tokenizer : std::filesystem::path(tokenizer).parent_path().string();
      return Ok();
    }
    if (value.is_object() && !value.empty()) {
      for (const auto& [key, item] : value.items()) KITE_RETURN_IF_ERROR(Visit(item, field + "." + key));
      return Ok();
    }
    NotUsed(field);
    return Ok();
  }
};

}  // namespace

bool IsGenieConfig(const json& root) {
  return root.is_object() && root.contains("dialog") && root["dialog"].is_object();
}

Status ApplyGenieConfig(const json& root, const std::string& path, RunSettings* settings,
                        std::vector<std::string>* warnings) {
  GenieReader reader{path, settings, warnings};
  for (const auto& [key, value] : root.items()) {
    if (key != "dialog") warnings->push_back(path + ": " + key + ": not used by Kite");
  }
  for (const auto& [key, value] : root["dialog"].items()) KITE_RETURN_IF_ERROR(reader.Visit(value, key));
  // After the loop: "greedy" sorts before "temp", and greedy wins over any temperature.
  if (reader.greedy) settings->sampler.temperature = 0.0f;
  return Ok();
}

}  // namespace kite
