#include "cli/generation_flags.h"

#include <chrono>
#include <cstdio>

#include "cli/escape.h"
#include "runtime/run_config.h"

namespace kite::cli {

GenerationFlags::GenerationFlags(CLI::App* command)
    : settings_(command), not_applicable_(command) {
  command->add_option("--config", config_path_,
                      "A run.json holding any of these settings, or Genie's genie_config.json");
  command->add_flag("-e,--escape", escape_,
                    "Turn \\n \\t \\r \\\\ \\\" \\' \\xHH in -p and --stop into their characters "
                    "(default on)");
  command->add_flag_callback("--no-escape", [this] { escape_ = false; },
                             "Take -p and --stop as typed, backslashes included");
}

std::string GenerationFlags::Unescaped(const std::string& text) const {
  return escape_ ? ProcessEscapes(text) : text;
}

Result<RunSettings> GenerationFlags::Resolve(bool need_model) const {
  RunSettings settings;
  std::vector<std::string> warnings;
  if (!config_path_.empty()) KITE_RETURN_IF_ERROR(ApplyConfigFile(config_path_, &settings, &warnings));
  for (const std::string& warning : settings_.ApplyTo(&settings)) warnings.push_back(warning);
  if (settings_.Given("stop")) {
    for (std::string& stop : settings.stop) stop = Unescaped(stop);
  }
  PrintWarnings(warnings);
  not_applicable_.Note();
  if (need_model && settings.model.empty()) {
    return InvalidInput("no model: give -m PATH or \"model\" in the --config file");
  }
  if (DrawSeedIfRandom(&settings)) {
    std::fprintf(stderr, "seed: %llu\n", static_cast<unsigned long long>(settings.sampler.seed));
  }
  return settings;
}

Result<std::unique_ptr<Engine>> LoadEngine(const RunSettings& settings, double* load_seconds) {
  const auto start = std::chrono::steady_clock::now();
  auto engine = Engine::Load(settings.model, settings.engine);
  *load_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (engine) PrintWarnings((*engine)->warnings());
  return engine;
}

}  // namespace kite::cli
