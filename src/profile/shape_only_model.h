// A model without weights, for `kite profile`: its graphs are the real ones (models/), built over
// weight views that point into one inaccessible reservation, so the graph has every shape and
// the cost model every op, while reading a weight would fault instead of returning garbage.
#pragma once

#include <memory>
#include <string>

#include "base/status.h"
#include "models/model.h"

namespace kite {

// The model of `config` with shape-only weights (f16, as a float export has them).
Result<std::unique_ptr<Model>> ShapeOnlyModel(const ModelConfig& config);

// The config `spec` names: a `kite synth` preset ("llama-3-8b"), an HF folder or config.json, or
// a GGUF file (its header: the weights are mapped, never read). NotFound listing the presets
// when it is none of these.
Result<ModelConfig> ProfileModelConfig(const std::string& spec);

}  // namespace kite
