// AIMET/QNN encodings files in and out of kite quantize (--import-encodings, --export-encodings).
#pragma once

#include <string>

#include "base/status.h"
#include "quant/quantize_model.h"
#include "quant/quantize_source.h"
#include "quant/vendor_json.h"

namespace kite {

// The encodings of --import-encodings, each checked against what it names: a weight of the
// model (and its shape), or a value of the model's graph (a node's output, e.g.
// "blk.0.attn_norm"). Names the model lacks are errors.
Result<VendorEncodings> ImportEncodings(const std::string& path, const QuantizeSource& source);
// Writes --export-encodings in --encodings-format, whole or not at all.
Status ExportEncodings(const VendorEncodings& encodings, const QuantizeModelOptions& options,
                       const std::string& input);

}  // namespace kite
