// kite_params: the settings of runtime/settings.h's table, set by their run.json keys and
// checked there, so that the C API accepts and refuses what `kite run` and run.json do, in the
// same words.
#include <nlohmann/json.hpp>

#include "api/handles.h"
#include "runtime/run_config.h"

namespace kite::api {

namespace {

constexpr const char* kWhere = "kite_params";

// Checks `value` as the table's setting `key` and stores it; a list setting gains its entries.
kite_status Set(kite_params* params, const char* function, const char* key,
                const nlohmann::json& value) {
  if (params == nullptr) return FailNull(function, "params");
  if (key == nullptr) return FailNull(function, "key");
  const Setting* setting = FindSetting(key);
  if (setting == nullptr) {
    std::string known;
    for (const Setting& entry : SettingsTable()) known += (known.empty() ? "" : ", ") + entry.key;
    return Fail(KITE_INVALID_INPUT, std::string(kWhere) + ": unknown setting \"" + key +
                                        "\" (known: " + known + ")");
  }
  std::vector<std::string> warnings;  // a thread count above the CPUs is lowered, as in kite run
  Result<SettingValue> parsed = setting->type == SettingType::kStringList
                                    ? ParseSettingJson(*setting, kWhere, key,
                                                       nlohmann::json::array({value}), &warnings)
                                    : ParseSettingJson(*setting, kWhere, key, value, &warnings);
  if (!parsed) return Fail(parsed.error());
  if (setting->type == SettingType::kStringList) {
    std::vector<std::string> list = std::get<std::vector<std::string>>(setting->load(params->settings));
    for (const std::string& text : std::get<std::vector<std::string>>(*parsed)) list.push_back(text);
    *parsed = std::move(list);
  }
  setting->store(params->settings, *parsed);
  return KITE_OK;
}

}  // namespace

}  // namespace kite::api

using kite::api::Fail;
using kite::api::FailNull;
using kite::api::Guard;

extern "C" {

kite_status kite_params_new(kite_params** out) {
  return Guard(__func__, [&](const char* function) {
    if (out == nullptr) return FailNull(function, "out");
    *out = new kite_params();
    return KITE_OK;
  });
}

void kite_params_free(kite_params* params) { delete params; }

kite_status kite_params_set_int(kite_params* params, const char* key, int64_t value) {
  return Guard(__func__, [&](const char* function) { return kite::api::Set(params, function, key, value); });
}

kite_status kite_params_set_float(kite_params* params, const char* key, double value) {
  return Guard(__func__, [&](const char* function) { return kite::api::Set(params, function, key, value); });
}

kite_status kite_params_set_bool(kite_params* params, const char* key, int value) {
  return Guard(__func__, [&](const char* function) { return kite::api::Set(params, function, key, value != 0); });
}

kite_status kite_params_set_string(kite_params* params, const char* key, const char* value) {
  return Guard(__func__, [&](const char* function) {
    if (value == nullptr) return FailNull(function, "value");
    return kite::api::Set(params, function, key, value);
  });
}

kite_status kite_params_set_json(kite_params* params, const char* json) {
  return Guard(__func__, [&](const char* function) {
    if (params == nullptr) return FailNull(function, "params");
    if (json == nullptr) return FailNull(function, "json");
    const nlohmann::json root = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
    if (root.is_discarded()) {
      return Fail(KITE_INVALID_INPUT, std::string(function) + ": not valid JSON");
    }
    kite::RunSettings settings = params->settings;  // unchanged unless every key is good
    std::vector<std::string> warnings;
    if (kite::Status status = kite::ApplySettingsJson(root, "kite_params_set_json", &settings, &warnings);
        !status) {
      return Fail(status.error());
    }
    params->settings = std::move(settings);
    return KITE_OK;
  });
}

kite_status kite_params_load_file(kite_params* params, const char* path) {
  return Guard(__func__, [&](const char* function) {
    if (params == nullptr) return FailNull(function, "params");
    if (path == nullptr) return FailNull(function, "path");
    kite::RunSettings settings = params->settings;
    std::vector<std::string> warnings;
    if (kite::Status status = kite::ApplyConfigFile(path, &settings, &warnings); !status) {
      return Fail(status.error());
    }
    params->settings = std::move(settings);
    return KITE_OK;
  });
}

}  // extern "C"
