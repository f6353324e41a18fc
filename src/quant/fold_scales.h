// Channel scales (AWQ's, SmoothQuant's) applied to a model's weights: graph/passes/
// fold_channel_scale.h run over the model's graph, the weights it made handed back as f32 by
// canonical name ("blk.0.attn_norm.weight", "blk.0.attn_q.weight", ...): what a layer callback
// of quant/calibrate.h returns as replacements, or what `kite quantize` writes in place of the
// originals.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "base/status.h"
#include "graph/passes/fold_channel_scale.h"
#include "models/model.h"

namespace kite {

using FoldedWeights = std::map<std::string, std::vector<float>>;

// Errors are the pass's (naming the node and what it found instead).
Result<FoldedWeights> FoldScales(const Model& model, std::vector<ChannelScale> scales);

}  // namespace kite
