// Kernel pieces every backend shares: the float-only backends' refusal of quantized values, the
// check of run-time KV cache data before attention, and the embedding lookup, which has nothing to vectorize (it dequantizes a few rows per step).
#pragma once

#include <string_view>

#include "backends/backend.h"
#include "graph/ops.h"

namespace kite {

// Every sequence of the cache holds attrs.layer, whose heads, head size and dtype fit k
// [T, Hkv, D], and each of the T tokens names one of the sequences; else InvalidInput naming
// what disagrees.
Status CheckAttentionCache(const AttentionAttrs& attrs, const ExecContext& context,
                           const TensorArg& k);

// A backend that computes in float only declines a node reading or writing a quantized value
// (one carrying an encoding), naming it; Yes otherwise, and for quantize and dequantize, whose
// kernels convert between the two. With `matmul_weights`, a matmul's encoded weight (input 1) is
// let through: the backend's matmul runs encoded weights.
SupportResult DeclineEncoded(const Graph& graph, const Node& node, std::string_view backend,
                             bool matmul_weights = false);

// Position `t` of a positions input (i32, any stride): RoPE's and attention's.
inline int32_t PositionAt(const TensorArg& positions, int64_t t) {
  return positions.as<const int32_t>()[t * positions.strides[0]];
}

// table [vocab, dim] (any dequantizable dtype), ids [T] i32 -> out [T, dim] f32, each row times
// `scale` (in f32); an id outside the table is InvalidInput naming it and its index.
Status LookUpEmbedding(const TensorArg& table, const TensorArg& ids, const TensorArg& out,
                       float scale);

}  // namespace kite
