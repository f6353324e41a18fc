// libFuzzer: arbitrary text -> a run.json object through the settings table (ApplySettingsJson),
// and -> one flag's value (ParseSettingText). Whatever the table accepts must lie in the ranges
// it promises the engine and the sampler: no NaN, no negative counts, probabilities in [0, 1].
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/settings.h"

namespace {

void Require(bool ok) {
  if (!ok) std::abort();
}

void CheckRanges(const kite::RunSettings& s) {
  const kite::SamplerConfig& sampler = s.sampler;
  Require(std::isfinite(sampler.temperature) && sampler.temperature >= 0);
  Require(sampler.top_p >= 0 && sampler.top_p <= 1);
  Require(sampler.min_p >= 0 && sampler.min_p <= 1);
  Require(sampler.top_k >= 0);
  Require(std::isfinite(sampler.repeat_penalty) && sampler.repeat_penalty > 0);
  Require(sampler.penalty_last_n >= -1);
  Require(std::isfinite(sampler.presence_penalty) && std::isfinite(sampler.frequency_penalty));
  Require(s.engine.context_length >= 0 && s.engine.prefill_chunk >= 1);
  Require(s.engine.threads >= 0 && s.engine.threads <= kite::UsableCpuCount());
  Require(s.n_predict >= -1);
  for (const std::string& stop : s.stop) Require(!stop.empty());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> warnings;

  const nlohmann::json root = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!root.is_discarded()) {
    kite::RunSettings settings;
    if (kite::ApplySettingsJson(root, "fuzz/run.json", &settings, &warnings)) CheckRanges(settings);
  }

  // The first byte picks a setting, the rest is the value typed after its flag.
  if (size == 0) return 0;
  const std::vector<kite::Setting>& table = kite::SettingsTable();
  const kite::Setting& setting = table[data[0] % table.size()];
  auto value = kite::ParseSettingText(setting, setting.flags.front(), text.substr(1), &warnings);
  if (value && setting.store) {
    kite::RunSettings settings;
    setting.store(settings, *value);
    CheckRanges(settings);
  }
  return 0;
}
