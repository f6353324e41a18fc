// Attention on the FP16 path (docs/npusim.md §11): k and v (f16 values) go into the KV cache,
// which holds them exactly (an f16 or f32 cache), then each query row attends in f64
// (fp16_math.cpp's Fp16AttendRow) and its output is rounded to f16.
#include <algorithm>
#include <cstring>

#include "backends/npusim/fp16_kernels.h"
#include "backends/npusim/steps.h"
#include "backends/shared_kernels.h"
#include "base/half.h"

namespace kite::npusim {

namespace {

// Row `t` of x [T, Hkv, D] (contiguous f16 values) into a cache row.
void StoreRow(const KvLayerView& layer, std::span<const float> x, std::byte* row) {
  const bool f16 = layer.dtype == DType::kF16;
  const int64_t dim = layer.head_dim;
  for (int64_t h = 0; h < layer.n_kv_heads; ++h) {
    std::byte* head = row + h * layer.head_bytes;
    for (int64_t d = 0; d < dim; ++d) {
      const float value = x[h * dim + d];
      if (f16) {
        const uint16_t bits = F32ToF16(value);
        std::memcpy(head + 2 * d, &bits, 2);
      } else {
        std::memcpy(head + 4 * d, &value, 4);
      }
    }
  }
}

}  // namespace

Result<Step> PrepareFp16(const AttentionAttrs& attrs, const NodeContext& c) {
  ThreadPool* pool = c.pool;
  return Step([attrs, pool](std::span<const TensorArg> in, const TensorArg& out,
                            const ExecContext& context) -> Status {
    KITE_RETURN_IF_ERROR(CheckAttentionCache(attrs, context, in[1]));
    const KvCacheView& cache = *context.kv_cache;
    ScratchArena arena(context.scratch);
    std::span<float> qkv[3];
    for (int i = 0; i < 3; ++i) {
      qkv[i] = arena.Take<float>(in[i].elements());
      ReadF16(in[i], qkv[i]);
    }
    auto position = [&](int64_t t) { return PositionAt(in[3], t); };
    const int64_t tokens = in[0].shape[0];
    const int64_t q_heads = in[0].shape[1];
    const int64_t dim = in[0].shape[2];
    const int64_t row = in[1].shape[1] * dim;
    int64_t longest = 0;
    for (int64_t t = 0; t < tokens; ++t) {
      const KvLayerView& layer = cache.layer(t, attrs.layer);
      if (layer.dtype != DType::kF16 && layer.dtype != DType::kF32) {
        return Unsupported("attention of layer " + std::to_string(attrs.layer) +
                           ": npusim's fp16 path keeps k and v in an f16 or f32 KV cache, not " +
                           std::string(DTypeName(layer.dtype)) + " (--kv-type f16)");
      }
      if (position(t) < 0 || position(t) >= layer.length) {
        return InvalidInput("position " + std::to_string(position(t)) + " of token " +
                            std::to_string(t) + " is outside the KV cache's valid length " +
                            std::to_string(layer.length));
      }
      StoreRow(layer, qkv[1].subspan(t * row, row), layer.key(position(t)));
      StoreRow(layer, qkv[2].subspan(t * row, row), layer.value(position(t)));
      longest = std::max<int64_t>(longest, position(t) + 1);
    }
    const int64_t group = q_heads / in[1].shape[1];
    float* y = out.as<float>();
    auto rows = [&](int64_t begin, int64_t end) {
      std::vector<double> weights(static_cast<size_t>(longest));
      for (int64_t r = begin; r < end; ++r) {
        const int64_t t = r / q_heads;
        const int64_t kv_head = r % q_heads / group;
        const KvLayerView& layer = cache.layer(t, attrs.layer);
        const Fp16Cache heads{.f16 = layer.dtype == DType::kF16,
                              .key = [&](int64_t j) -> const void* {
                                return layer.key(j) + kv_head * layer.head_bytes;
                              },
                              .value = [&](int64_t j) -> const void* {
                                return layer.value(j) + kv_head * layer.head_bytes;
                              }};
        Fp16AttendRow(attrs.scale, attrs.window, heads, position(t), qkv[0].subspan(r * dim, dim),
                      weights, {y + r * dim, static_cast<size_t>(dim)});
      }
    };
    pool->ParallelForChunks(tokens * q_heads, 4, rows);
    return Ok();
  });
}

}  // namespace kite::npusim
