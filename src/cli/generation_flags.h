// The flags `kite run` and `kite chat` share: every setting of the table (runtime/settings.h),
// --config FILE (a run.json or Genie's genie_config.json, see runtime/run_config.h),
// -e/--escape and --no-escape, and llama.cpp's -ngl/-fa (accepted, noted, ignored). A flag given
// on the command line overrides the file's value, which overrides the table's default.
#pragma once

#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "cli/setting_flags.h"
#include "runtime/engine.h"
#include "runtime/settings.h"

namespace kite::cli {

class GenerationFlags {
 public:
  // Adds the flags to `command`.
  explicit GenerationFlags(CLI::App* command);

  // Defaults, then the --config file, then every flag given on the command line. Prints the
  // warnings (a clamped thread count, Genie fields Kite does not use), the notes of -ngl/-fa and,
  // for --seed -1, the seed drawn ("seed: N") to stderr. A model is required unless
  // `need_model` is false (a run on a server, which has its own).
  Result<RunSettings> Resolve(bool need_model = true) const;

  // `text` typed on the command line (a -p prompt) with its escapes processed, unless
  // --no-escape was given.
  std::string Unescaped(const std::string& text) const;

 private:
  std::string config_path_;
  bool escape_ = true;
  SettingFlags settings_;
  NotApplicableFlags not_applicable_;
};

// Engine::Load with the settings; *load_seconds is how long it took.
Result<std::unique_ptr<Engine>> LoadEngine(const RunSettings& settings, double* load_seconds);

}  // namespace kite::cli
