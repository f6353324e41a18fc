// Channel scales (AWQ's, SmoothQuant's) applied to a model's weights: graph/passes/
// fold_channel_scale.h run over the model's graph, the weights it made handed back as f32 by
// canonical name ("blk.0.attn_norm.weight", "blk.0.attn_q.weight", ...): what a layer callback
// of quant/calibrate.h returns as replacements, or what `kite quantize` writes in place of the
// originals.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "graph/passes/fold_channel_scale.h"
#include "models/model.h"

namespace kite {

using FoldedWeights = std::map<std::string, std::vector<float>>;

// A weight as f32 (dequantized from whatever type it is stored in); an error names the weight.
Result<std::vector<float>> WeightFloats(const TensorView& weight);

// Errors are the pass's (naming the node and what it found instead).
Result<FoldedWeights> FoldScales(const Model& model, std::vector<ChannelScale> scales);

// `model` with `weights` in place of its own (f32; the rest are the model's, used in place: the
// model must outlive the result); "output.weight" given for a tied model unties it. An error
// names a weight the model does not have or whose size differs.
Result<std::unique_ptr<Model>> WithWeights(const Model& model, const FoldedWeights& weights);

}  // namespace kite
