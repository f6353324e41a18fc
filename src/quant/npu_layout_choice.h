// Which NPU layout kite quantize --type names, and which tensors take it.
#pragma once

#include "base/status.h"
#include "quant/npu_weights.h"
#include "quant/quantize_model.h"
#include "quant/quantize_source.h"
#include "quant/tensor_types.h"

namespace kite {

// The NPU layout `options.type` names (with --group applied), or nullptr for a ggml type.
Result<const NpuWeightType*> NpuLayoutOf(const QuantizeModelOptions& options);

// Whether a tensor takes the NPU layout: the block linears and an untied head the user did not
// give another type, whose rows the layout's blocks (and 4-bit pairs) divide.
bool TakesNpuLayout(const SourceTensorInfo& info, const TensorTypeChoice& choice,
                    const NpuWeightType& layout, const QuantizeModelOptions& options);

}  // namespace kite
