// The flags `kite run` and `kite chat` share: model, context, backend and sampler settings. Each
// overrides the same field of a -c run.json (see run_config.h), which overrides the defaults.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/run_config.h"
#include "runtime/engine.h"

namespace kite::cli {

class GenerationFlags {
 public:
  // Adds the flags to `command`.
  explicit GenerationFlags(CLI::App* command);

  // Defaults, then the -c file, then every flag given on the command line.
  Result<RunConfig> Resolve() const;

 private:
  template <typename T>
  void Flag(CLI::App* command, const std::string& names, std::optional<T>* target,
            const std::string& help);

  std::string config_path_;
  std::optional<std::string> model_, backend_, kv_type_, chat_template_;
  std::optional<int32_t> context_, prefill_chunk_, n_predict_, top_k_, repeat_last_n_, threads_;
  std::optional<float> temperature_, top_p_, min_p_, repeat_penalty_, presence_penalty_,
      frequency_penalty_;
  std::optional<uint64_t> seed_;
  std::vector<std::string> stop_;
  bool check_tensors_ = false;
};

EngineOptions EngineOptionsFrom(const RunConfig& config);
// Engine::Load with the settings of `config`; *load_seconds is how long it took.
Result<std::unique_ptr<Engine>> LoadEngine(const RunConfig& config, double* load_seconds);

}  // namespace kite::cli
