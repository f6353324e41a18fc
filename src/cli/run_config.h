// The one JSON run config (Genie-style): model, context, backend, sampler and stop settings.
// `kite run`/`kite chat` read it with -c and let command-line flags override each field.
//
// {
//   "model": "models/demo",        // relative paths are relative to the config file's folder
//   "context": 2048, "prefill_chunk": 128, "backend": "cpu", "threads": 2, "kv_type": "f16",
//   "n_predict": 128, "stop": ["\n\n"], "chat_template": "chatml",
//   "sampler": {"temp": 0.8, "top_k": 40, "top_p": 0.95, "min_p": 0.05, "repeat_penalty": 1.0,
//               "repeat_last_n": 64, "presence_penalty": 0.0, "frequency_penalty": 0.0, "seed": 42}
// }
// Unknown keys and ill-typed values are errors naming the file and the key.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "runtime/sampler.h"
#include "tensor/dtype.h"

namespace kite::cli {

struct RunConfig {
  std::string model;
  int32_t context = 0;  // 0: the model's own limit, capped at 4096
  int32_t prefill_chunk = 128;
  std::string backend = "cpu";
  int32_t threads = 0;  // cpu backend threads; 0: all cores
  DType kv_type = DType::kF16;
  bool check_tensors = false;  // scan the weights for NaN/Inf at load
  int32_t n_predict = 128;
  std::vector<std::string> stop;
  std::string chat_template;  // a built-in template's name; "" = the model's own
  SamplerConfig sampler;
};

// Fields present in the file replace those of `config`.
Status ApplyRunConfigFile(const std::string& path, RunConfig* config);

}  // namespace kite::cli
