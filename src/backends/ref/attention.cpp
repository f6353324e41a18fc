#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "backends/ref/kernels.h"
#include "backends/shared_kernels.h"
#include "base/half.h"

namespace kite::ref {

namespace {

// Element i of a cache row (k or v of one position) stored at `row`.
double LoadCache(const KvLayerView& layer, const std::byte* row, int64_t i) {
  if (layer.dtype == DType::kF16) {
    uint16_t bits;
    std::memcpy(&bits, row + 2 * i, 2);
    return F16ToF32(bits);
  }
  float value;
  std::memcpy(&value, row + 4 * i, 4);
  return value;
}

void StoreCache(const KvLayerView& layer, std::byte* row, int64_t i, float value) {
  if (layer.dtype == DType::kF16) {
    const uint16_t bits = F32ToF16(value);
    std::memcpy(row + 2 * i, &bits, 2);
  } else {
    std::memcpy(row + 4 * i, &value, 4);
  }
}

// Copies token t of x [T, Hkv, D] into a cache row [Hkv, D].
void WriteRow(const KvLayerView& layer, const TensorArg& x, int64_t t, std::byte* row) {
  const float* xs = x.as<const float>();
  for (int64_t h = 0; h < x.shape[1]; ++h) {
    for (int64_t i = 0; i < x.shape[2]; ++i) {
      StoreCache(layer, row, h * x.shape[2] + i,
                 xs[t * x.strides[0] + h * x.strides[1] + i * x.strides[2]]);
    }
  }
}

}  // namespace

// Scratch: one output head accumulated in double [D].
uint64_t Scratch(const AttentionAttrs&, const Graph& graph, const Node& node) {
  return static_cast<uint64_t>(graph.value(node.inputs[0]).shape[2]) * sizeof(double);
}

// q [T, Hq, D], k and v [T, Hkv, D], positions [T] -> out [T, Hq, D]. First k and v go into the
// cache at their positions; then query head h of token t attends to the cache entries
// 0..positions[t] of kv head h / (Hq / Hkv): out = Σ_j softmax_j(scale · q·k_j) · v_j.
Status Run(const AttentionAttrs& attrs, const KernelArgs& args) {
  const TensorArg& q = args.in[0];
  const TensorArg& k = args.in[1];
  const TensorArg& v = args.in[2];
  const TensorArg& positions = args.in[3];
  KITE_RETURN_IF_ERROR(CheckAttentionCache(attrs, args.context, k));
  const KvLayerView& layer = args.context.kv_cache->layers[attrs.layer];
  const int64_t tokens = q.shape[0];
  const int64_t q_heads = q.shape[1];
  const int64_t dim = q.shape[2];
  const int64_t group = q_heads / k.shape[1];  // query heads per kv head
  auto position = [&](int64_t t) {
    return positions.as<const int32_t>()[t * positions.strides[0]];
  };

  for (int64_t t = 0; t < tokens; ++t) {
    if (position(t) < 0 || position(t) >= layer.length) {
      return InvalidInput("position " + std::to_string(position(t)) + " of token " +
                          std::to_string(t) + " is outside the KV cache's valid length " +
                          std::to_string(layer.length));
    }
    WriteRow(layer, k, t, layer.key(position(t)));
    WriteRow(layer, v, t, layer.value(position(t)));
  }

  const float* qs = q.as<const float>();
  double* acc = reinterpret_cast<double*>(args.context.scratch.data());
  for (int64_t t = 0; t < tokens; ++t) {
    for (int64_t h = 0; h < q_heads; ++h) {
      const float* query = qs + t * q.strides[0] + h * q.strides[1];
      const int64_t kv_head = h / group;
      auto score = [&](int64_t j) {
        const std::byte* key = layer.key(j);
        double dot = 0.0;
        for (int64_t i = 0; i < dim; ++i) {
          dot += query[i * q.strides[2]] * LoadCache(layer, key, kv_head * dim + i);
        }
        return attrs.scale * dot;
      };
      // Softmax weights are exp(score - max) / sum, with the max taken first for stability.
      double max = -std::numeric_limits<double>::infinity();
      for (int64_t j = 0; j <= position(t); ++j) max = std::max(max, score(j));
      double sum = 0.0;
      std::fill(acc, acc + dim, 0.0);
      for (int64_t j = 0; j <= position(t); ++j) {
        const double weight = std::exp(score(j) - max);
        sum += weight;
        const std::byte* value = layer.value(j);
        for (int64_t i = 0; i < dim; ++i)
          acc[i] += weight * LoadCache(layer, value, kv_head * dim + i);
      }
      float* out = args.out.as<float>() + (t * q_heads + h) * dim;
      for (int64_t i = 0; i < dim; ++i) out[i] = static_cast<float>(acc[i] / sum);
    }
  }
  return Ok();
}

}  // namespace kite::ref
