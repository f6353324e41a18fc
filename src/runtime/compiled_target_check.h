// How a run meets a compiled model (`kite compile`, models/compiled_target.h): the chip it was
// compiled for against the one the run targets, and the context it may use among the compiled
// ones. A file compiled for one chip holds that chip's layouts and placement, so running it as
// another is refused, not guessed at.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"
#include "models/model_config.h"

namespace kite {

struct CompiledRun {
  // What BackendOptions::chip gets: the chip file's name ("8gen3"), the chip a simulating
  // backend models; "" : the backend's default.
  std::string chip;
  int32_t context = 0;  // the engine's context; 0: the caller's rule
};

// `chip` (a chips/NAME.json) and `context` as the caller asked ("" and 0: not asked). For a
// compiled model: the file's chip unless another is asked (Unsupported naming both chips and their
// Hexagon generations), and the smallest compiled context holding `context` (the largest when 0;
// InvalidInput listing the compiled ones when none does). For any other model: `chip` checked
// against the chip files (NotFound listing them), `context` unchanged.
Result<CompiledRun> ResolveCompiledRun(const ModelConfig& config, const std::string& chip,
                                       int32_t context);

}  // namespace kite
