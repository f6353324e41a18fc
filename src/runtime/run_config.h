// The run config file (what `kite run` and `kite chat` take with --config; a server or the C
// API read the same): Kite's run.json, or Genie's genie_config.json (recognised by its
// top-level "dialog" object, see genie_config.h). run.json holds the settings of the table
// (runtime/settings.h) under their keys:
//
// {
//   "model": "models/demo",        // relative paths are relative to the config file's folder
//   "context": 2048, "prefill_chunk": 128, "backend": "cpu", "threads": 2, "kv_type": "f16",
//   "check_tensors": false, "n_predict": 128, "ignore_eos": false, "stop": ["\n\n"],
//   "chat_template": "chatml",
//   "sampler": {"temp": 0.8, "top_k": 40, "top_p": 0.95, "min_p": 0.05, "repeat_penalty": 1.0,
//               "repeat_last_n": 64, "presence_penalty": 0.0, "frequency_penalty": 0.0, "seed": 42}
// }
// Unknown keys, ill-typed and out-of-range values are errors naming the file and the key, in the
// table's words ("run.json: \"sampler.top_p\" = 2: must be in [0, 1]").
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "runtime/session.h"
#include "runtime/settings.h"

namespace kite {

// Settings present in the file replace those of *settings; warnings (a clamped thread count,
// Genie fields Kite does not use) are appended to *warnings.
Status ApplyConfigFile(const std::string& path, RunSettings* settings,
                       std::vector<std::string>* warnings);

// `path` as written in the config file at `config_path`: relative paths are taken from the
// config file's folder.
std::string PathFromConfig(const std::string& config_path, const std::string& path);

// What the settings ask of each Session::Generate call (on_token is left to the caller).
Session::GenerateOptions GenerateOptionsOf(const RunSettings& settings);

}  // namespace kite
