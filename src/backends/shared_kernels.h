// Kernel pieces every backend shares: the check of run-time KV cache data before attention, and
// the embedding lookup, which has nothing to vectorize (it dequantizes a few rows per step).
#pragma once

#include "backends/backend.h"
#include "graph/ops.h"

namespace kite {

// The cache holds attrs.layer, and that layer's heads, head size and dtype (f16/f32) fit k
// [T, Hkv, D]; else InvalidInput naming both.
Status CheckAttentionCache(const AttentionAttrs& attrs, const ExecContext& context,
                           const TensorArg& k);

// table [vocab, dim] (any dequantizable dtype), ids [T] i32 -> out [T, dim] f32; an id outside
// the table is InvalidInput naming it and its index.
Status LookUpEmbedding(const TensorArg& table, const TensorArg& ids, const TensorArg& out);

}  // namespace kite
