#include "runtime/run_config.h"

#include <filesystem>

#include "base/json_util.h"
#include "base/mapped_file.h"
#include "runtime/genie_config.h"

namespace kite {

std::string PathFromConfig(const std::string& config_path, const std::string& path) {
  const std::filesystem::path folder = std::filesystem::path(config_path).parent_path();
  if (std::filesystem::path(path).is_relative() && !folder.empty()) return (folder / path).string();
  return path;
}

Status ApplyConfigFile(const std::string& path, RunSettings* settings,
                       std::vector<std::string>* warnings) {
  const std::string text = KITE_TRY(ReadTextFile(path, kConfigFileLimit));
  const nlohmann::json root = KITE_TRY(ParseJson(text, path));
  if (IsGenieConfig(root)) return ApplyGenieConfig(root, path, settings, warnings);
  KITE_RETURN_IF_ERROR(ApplySettingsJson(root, path, settings, warnings));
  if (root.contains("model")) settings->model = PathFromConfig(path, settings->model);
  return Ok();
}

Session::GenerateOptions GenerateOptionsOf(const RunSettings& settings) {
  Session::GenerateOptions options;
  options.max_tokens = settings.n_predict;
  options.ignore_eos = settings.ignore_eos;
  options.stop_strings = settings.stop;
  options.sampler = settings.sampler;
  options.draft_limits = settings.speculative.limits;  // the drafter comes from SpeculativeSetup
  return options;
}

}  // namespace kite
