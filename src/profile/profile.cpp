#include "profile/profile.h"

#include <algorithm>

#include "profile/shape_only_model.h"

namespace kite {

Result<ProfileResult> ProfileModel(const ModelConfig& config, const Chip& chip,
                                   const Recipe& recipe, const ProfileOptions& options) {
  if (options.prompt < 1 || options.ctx < 1 || options.chunk < 1) {
    return InvalidInput("--prompt, --ctx and the chunk must be at least 1");
  }
  if (options.prompt > options.ctx) {
    return InvalidInput("a prompt of " + std::to_string(options.prompt) +
                        " tokens does not fit the static context of " +
                        std::to_string(options.ctx));
  }
  if (options.chunk > options.ctx) {
    return InvalidInput("the prefill chunk of " + std::to_string(options.chunk) +
                        " tokens exceeds the static context of " + std::to_string(options.ctx));
  }
  const std::unique_ptr<Model> model = KITE_TRY(ShapeOnlyModel(config));
  ProfileResult r;
  r.config = config;
  r.chip = chip;
  r.recipe = recipe;
  r.options = options;
  const Graph prefill = KITE_TRY(model->BuildGraph({.tokens = options.chunk}));
  const Graph decode = KITE_TRY(model->BuildGraph({.tokens = 1}));
  r.prefill = KITE_TRY(CostGraph(prefill, chip, recipe, options.ctx));
  r.decode = KITE_TRY(CostGraph(decode, chip, recipe, options.ctx));
  const int32_t chunks = (options.prompt + options.chunk - 1) / options.chunk;
  r.ttft_s = chunks * r.prefill.total_s;
  r.prefill_tps = options.prompt / r.ttft_s;
  r.decode_tps = 1.0 / r.decode.total_s;
  for (const OpCost& op : r.decode.ops) r.weight_bytes += op.weight_bytes;
  // The CPU's embedding table, at the weight width.
  r.weight_bytes += static_cast<double>(config.vocab) * config.hidden * recipe.weight_bits / 8.0;
  r.kv_bytes = 2.0 * config.n_layers * options.ctx * config.n_kv_heads * config.head_dim *
               recipe.kv_bytes;
  for (const OpCost& op : r.prefill.ops) {
    if (op.op == "attention") continue;  // its bytes are the KV cache, counted above
    r.activation_bytes = std::max(r.activation_bytes, op.bytes - op.weight_bytes);
  }
  r.peak_bytes = r.weight_bytes + r.kv_bytes + r.activation_bytes;
  return r;
}

}  // namespace kite
