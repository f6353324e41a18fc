#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "backends/ref/kernels.h"
#include "backends/shared_kernels.h"
#include "tensor/dequantize.h"
#include "tensor/quantize.h"

namespace kite::ref {

namespace {

// Scratch layout: one output head accumulated in double [D], one key and one value head as f32
// [D] each, and one token's k or v row gathered contiguously [Hkv, D].
struct Buffers {
  double* acc;
  float* key;
  float* value;
  float* row;
};

Buffers Split(std::span<std::byte> scratch, int64_t dim) {
  auto* acc = reinterpret_cast<double*>(scratch.data());
  auto* floats = reinterpret_cast<float*>(acc + dim);
  return {acc, floats, floats + dim, floats + 2 * dim};
}

// Head `kv_head` of the cache row at `row` as f32 [D], whatever the cache type (f32, f16 bits,
// q8_0 blocks): the tensor layer's reference dequantizer.
Status LoadHead(const KvLayerView& layer, const std::byte* row, int64_t kv_head, float* out) {
  return Dequantize(layer.dtype, row + kv_head * layer.head_bytes, out, layer.head_dim);
}

// Stores token t of x [T, Hkv, D] in the cache row at `row`, converted to the cache type by the
// tensor layer's reference quantizer (f16: round to nearest even; q8_0: ggml's
// quantize_row_q8_0_ref, which refuses non-finite values: an error naming x's token).
Status WriteRow(const KvLayerView& layer, const TensorArg& x, const char* name, int64_t t,
                float* gathered, std::byte* row) {
  const float* xs = x.as<const float>();
  for (int64_t h = 0; h < x.shape[1]; ++h) {
    for (int64_t i = 0; i < x.shape[2]; ++i) {
      gathered[h * x.shape[2] + i] = xs[t * x.strides[0] + h * x.strides[1] + i * x.strides[2]];
    }
  }
  Status stored = Quantize(layer.dtype, gathered, row, x.shape[1] * x.shape[2]);
  if (!stored) {
    return std::unexpected(std::move(stored.error())
                               .WithContext(std::string(name) + " of token " + std::to_string(t) +
                                            " into the KV cache"));
  }
  return Ok();
}

}  // namespace

// Scratch: see Buffers.
uint64_t Scratch(const AttentionAttrs&, const Graph& graph, const Node& node) {
  const Value& k = graph.value(node.inputs[1]);
  const uint64_t dim = static_cast<uint64_t>(k.shape[2]);
  return dim * sizeof(double) + (2 * dim + static_cast<uint64_t>(k.shape[1]) * dim) * sizeof(float);
}

// q [T, Hq, D], k and v [T, Hkv, D], positions [T] -> out [T, Hq, D]. First k and v go into the
// cache of each token's sequence at their positions; then query head h of token t attends to
// its sequence's cache entries first..positions[t] of kv head h / (Hq / Hkv), first = 0 or the
// window's start: out = Σ_j softmax_j(s_j) · v_j with s_j = scale · q·k_j (soft-capped to
// c · tanh(s_j / c) when attrs.softcap = c > 0), k_j and v_j as the cache holds them (rounded
// to f16, or q8_0 blocks dequantized).
Status Run(const AttentionAttrs& attrs, const KernelArgs& args) {
  const TensorArg& q = args.in[0];
  const TensorArg& k = args.in[1];
  const TensorArg& v = args.in[2];
  const TensorArg& positions = args.in[3];
  KITE_RETURN_IF_ERROR(CheckAttentionCache(attrs, args.context, k));
  const KvCacheView& cache = *args.context.kv_cache;
  const int64_t tokens = q.shape[0];
  const int64_t q_heads = q.shape[1];
  const int64_t dim = q.shape[2];
  const int64_t group = q_heads / k.shape[1];  // query heads per kv head
  const Buffers buffers = Split(args.context.scratch, dim);
  auto position = [&](int64_t t) { return PositionAt(positions, t); };

  for (int64_t t = 0; t < tokens; ++t) {
    const KvLayerView& layer = cache.layer(t, attrs.layer);
    if (position(t) < 0 || position(t) >= layer.length) {
      return InvalidInput("position " + std::to_string(position(t)) + " of token " +
                          std::to_string(t) + " is outside the KV cache's valid length " +
                          std::to_string(layer.length));
    }
    KITE_RETURN_IF_ERROR(WriteRow(layer, k, "k", t, buffers.row, layer.key(position(t))));
    KITE_RETURN_IF_ERROR(WriteRow(layer, v, "v", t, buffers.row, layer.value(position(t))));
  }

  const float* qs = q.as<const float>();
  double* acc = buffers.acc;
  for (int64_t t = 0; t < tokens; ++t) {
    const KvLayerView& layer = cache.layer(t, attrs.layer);  // of token t's sequence
    for (int64_t h = 0; h < q_heads; ++h) {
      const float* query = qs + t * q.strides[0] + h * q.strides[1];
      const int64_t kv_head = h / group;
      auto score = [&](int64_t j, double* out) -> Status {
        KITE_RETURN_IF_ERROR(LoadHead(layer, layer.key(j), kv_head, buffers.key));
        double dot = 0.0;
        for (int64_t i = 0; i < dim; ++i) dot += query[i * q.strides[2]] * buffers.key[i];
        *out = attrs.scale * dot;
        if (attrs.softcap > 0.0f) *out = attrs.softcap * std::tanh(*out / attrs.softcap);
        return Ok();
      };
      // Softmax weights are exp(score - max) / sum, with the max taken first for stability.
      const int64_t first = FirstVisiblePosition(attrs, position(t));
      double max = -std::numeric_limits<double>::infinity();
      for (int64_t j = first; j <= position(t); ++j) {
        double s = 0.0;
        KITE_RETURN_IF_ERROR(score(j, &s));
        max = std::max(max, s);
      }
      double sum = 0.0;
      std::fill(acc, acc + dim, 0.0);
      for (int64_t j = first; j <= position(t); ++j) {
        double s = 0.0;
        KITE_RETURN_IF_ERROR(score(j, &s));
        const double weight = std::exp(s - max);
        sum += weight;
        KITE_RETURN_IF_ERROR(LoadHead(layer, layer.value(j), kv_head, buffers.value));
        for (int64_t i = 0; i < dim; ++i) acc[i] += weight * buffers.value[i];
      }
      float* out = args.out.as<float>() + (t * q_heads + h) * dim;
      for (int64_t i = 0; i < dim; ++i) out[i] = static_cast<float>(acc[i] / sum);
    }
  }
  return Ok();
}

}  // namespace kite::ref
