// --target-bpw and --target-size: the block linears' types that meet a size budget.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "base/status.h"
#include "format/gguf.h"
#include "quant/quantize_model.h"
#include "quant/quantize_source.h"
#include "quant/tensor_types.h"

namespace kite {

// The block linears' types for --target-bpw / --target-size (mix_search.h): every quantizable
// "blk." weight the user did not pin with --override is measured and solved for; the head, the
// embedding and pinned weights keep their types and count against a size target. Sets each
// solved tensor's choice in `choices` and report->target.
Status SolveSizeTarget(const QuantizeSource& source, const GgufWriter& metadata,
                       const std::map<std::string, std::vector<float>>& importance,
                       const QuantizeModelOptions& options, std::vector<TensorTypeChoice>* choices,
                       QuantizeReport* report);

}  // namespace kite
