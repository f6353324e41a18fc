// `kite profile`'s estimate: a model's prefill chunk and decode step priced on a chip, and the
// figures users look for first (time to first token, tokens/s, peak memory, op placement).
#pragma once

#include <cstdint>

#include "base/status.h"
#include "models/model_config.h"
#include "profile/chip.h"
#include "profile/cost_model.h"
#include "profile/recipe.h"

namespace kite {

struct ProfileOptions {
  int32_t prompt = 128;  // prompt tokens for the time to first token
  int32_t ctx = 4096;    // the static context the graphs are compiled for
  int32_t chunk = 128;   // the compiled prefill chunk
};

struct ProfileResult {
  ModelConfig config;
  Chip chip;
  Recipe recipe;
  ProfileOptions options;
  GraphCost prefill;  // one chunk
  GraphCost decode;   // one token
  double ttft_s = 0;  // ceil(prompt / chunk) prefill chunks
  double prefill_tps = 0, decode_tps = 0;
  double weight_bytes = 0;      // NPU weights and the CPU's embedding table
  double kv_bytes = 0;          // the static context's KV cache
  double activation_bytes = 0;  // the largest prefill op's activations in and out
  double peak_bytes = 0;
};

// InvalidInput for a prompt longer than the context or sizes below 1.
Result<ProfileResult> ProfileModel(const ModelConfig& config, const Chip& chip,
                                   const Recipe& recipe, const ProfileOptions& options);

}  // namespace kite
