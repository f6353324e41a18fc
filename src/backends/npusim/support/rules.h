// The per-op rules behind NpuRule (npu_support.h), one file each; internal to the support folder.
#pragma once

#include "backends/npusim/support/npu_support.h"

namespace kite::npu_rules {

NpuVerdict MatMul(const Graph& graph, const Node& node, const NpuTarget& target);
NpuVerdict Attention(const Graph& graph, const Node& node, const NpuTarget& target);
NpuVerdict Rope(const Graph& graph, const Node& node, const NpuTarget& target);
NpuVerdict Softcap(const Graph& graph, const Node& node, const NpuTarget& target);
NpuVerdict Embedding(const Graph& graph, const Node& node, const NpuTarget& target);
// Element-wise and normalising ops (add, mul, rms_norm, silu, gelu, swiglu, geglu, softmax,
// quantize, dequantize): the NPU's vector unit runs them at any integer width.
NpuVerdict Elementwise(const Graph& graph, const Node& node, const NpuTarget& target);

// The gate every rule applies first: an fp16 activation on a chip without FP16. Yes otherwise.
SupportResult Fp16Gate(const Graph& graph, const Node& node, const NpuTarget& target);

}  // namespace kite::npu_rules
