// Causal grouped-query attention over the paged KV cache, read in place (f16 or f32 pages).
// Each (token, query head) runs an online softmax over tiles of cached positions: scores of a
// tile, one vectorized exp, the running max and sum rescaled, values accumulated in f32. Work
// units (token, head) are dealt to the threads round-robin, which balances causal prefill.
#include <cmath>
#include <cstring>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backends/cpu/attention.cpp"
#define HWY_DISABLED_TARGETS (HWY_SSSE3 | HWY_SSE4)
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
// clang-format off: after highway.h, once per target
#include <hwy/contrib/math/math-inl.h>
// clang-format on

#include "backends/cpu/kernels.h"
#include "backends/shared_kernels.h"
#include "base/half.h"

#ifndef KITE_CPU_ATTENTION_ONCE
#define KITE_CPU_ATTENTION_ONCE
namespace kite::cpu {
// Largest head size the kernel keeps on the stack.
inline constexpr int64_t kMaxHeadDim = 512;
// Cached positions per online-softmax tile.
inline constexpr int64_t kTile = 64;
}  // namespace kite::cpu
#endif

HWY_BEFORE_NAMESPACE();
namespace kite::cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;

template <typename T>
HWY_INLINE hn::Vec<DF> LoadRow(const std::byte* p) {
  const DF df;
  if constexpr (std::is_same_v<T, float>) {
    return hn::LoadU(df, reinterpret_cast<const float*>(p));
  } else {
    const hn::Rebind<hwy::float16_t, DF> dh;
    return hn::PromoteTo(df, hn::LoadU(dh, reinterpret_cast<const hwy::float16_t*>(p)));
  }
}

// out [D] = softmax over j in [0, last] of scale · q·k_j, applied to v_j, for one query head.
template <typename T>
void AttendHead(const float* q, const KvLayerView& layer, int64_t kv_head, int64_t last,
                float scale, float* out) {
  const DF df;
  const int64_t dim = layer.head_dim;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  const int64_t head_offset = kv_head * dim * static_cast<int64_t>(sizeof(T));
  HWY_ALIGN float acc[kMaxHeadDim];
  HWY_ALIGN float p[kTile];
  for (int64_t i = 0; i < dim; i += lanes) hn::Store(hn::Zero(df), df, acc + i);
  float max = -INFINITY;
  float sum = 0.0f;
  for (int64_t j0 = 0; j0 <= last; j0 += kTile) {
    const int64_t count = std::min(kTile, last + 1 - j0);
    float tile_max = -INFINITY;
    for (int64_t j = 0; j < count; ++j) {
      const std::byte* key = layer.key(j0 + j) + head_offset;
      auto dot = hn::Zero(df);
      for (int64_t i = 0; i < dim; i += lanes) {
        dot = hn::MulAdd(hn::LoadU(df, q + i), LoadRow<T>(key + i * sizeof(T)), dot);
      }
      p[j] = scale * hn::GetLane(hn::SumOfLanes(df, dot));
      tile_max = std::max(tile_max, p[j]);
    }
    for (int64_t j = count; j % lanes != 0; ++j) p[j] = 0.0f;  // lanes past the tile's end
    const float new_max = std::max(max, tile_max);
    const float correction = std::exp(max - new_max);  // 0 on the first tile
    max = new_max;
    auto tile_sum = hn::Zero(df);
    for (int64_t j = 0; j < count; j += lanes) {
      const auto e = hn::Exp(df, hn::Sub(hn::Load(df, p + j), hn::Set(df, max)));
      hn::Store(e, df, p + j);
      const size_t valid = static_cast<size_t>(std::min(lanes, count - j));
      tile_sum = hn::Add(tile_sum, hn::IfThenElseZero(hn::FirstN(df, valid), e));
    }
    sum = sum * correction + hn::GetLane(hn::SumOfLanes(df, tile_sum));
    for (int64_t i = 0; i < dim; i += lanes) {
      auto a = hn::Mul(hn::Load(df, acc + i), hn::Set(df, correction));
      for (int64_t j = 0; j < count; ++j) {
        const std::byte* value = layer.value(j0 + j) + head_offset;
        a = hn::MulAdd(hn::Set(df, p[j]), LoadRow<T>(value + i * sizeof(T)), a);
      }
      hn::Store(a, df, acc + i);
    }
  }
  const auto inv = hn::Set(df, 1.0f / sum);
  for (int64_t i = 0; i < dim; i += lanes)
    hn::StoreU(hn::Mul(hn::Load(df, acc + i), inv), df, out + i);
}

void Attend(const float* q, const KvLayerView& layer, int64_t kv_head, int64_t last, float scale,
            float* out) {
  if (layer.dtype == DType::kF16) {
    AttendHead<hwy::float16_t>(q, layer, kv_head, last, scale, out);
  } else {
    AttendHead<float>(q, layer, kv_head, last, scale, out);
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace kite::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kite::cpu {

HWY_EXPORT(Attend);

namespace {

// Copies token t of x [T, Hkv, D] (contiguous) into a cache row [Hkv, D].
void WriteRow(const KvLayerView& layer, const float* x, int64_t n, std::byte* row) {
  if (layer.dtype == DType::kF16) {
    for (int64_t i = 0; i < n; ++i) {
      const uint16_t bits = F32ToF16(x[i]);
      std::memcpy(row + 2 * i, &bits, 2);
    }
  } else {
    std::memcpy(row, x, n * sizeof(float));
  }
}

}  // namespace

SupportResult Support(const AttentionAttrs&, const Graph& graph, const Node& node) {
  for (int i = 0; i < 3; ++i) {
    const Value& v = graph.value(node.inputs[i]);
    if (!v.contiguous()) return SupportResult::No("input '" + v.name + "' is a strided view");
  }
  const int64_t dim = graph.value(node.inputs[0]).shape[2];
  if (dim % 16 != 0 || dim > kMaxHeadDim) {
    return SupportResult::No("head size " + std::to_string(dim) +
                             " is not a multiple of 16 up to " + std::to_string(kMaxHeadDim));
  }
  return SupportResult::Yes();
}

// q [T, Hq, D], k and v [T, Hkv, D], positions [T] -> out [T, Hq, D]; the same contract as ref:
// k and v enter the cache first, then query t sees positions 0..positions[t].
Status Run(const AttentionAttrs& attrs, const KernelArgs& args) {
  const TensorArg& q = args.in[0];
  const TensorArg& k = args.in[1];
  const TensorArg& v = args.in[2];
  const TensorArg& positions = args.in[3];
  KITE_RETURN_IF_ERROR(CheckAttentionCache(attrs, args.context, k));
  const KvLayerView& layer = args.context.kv_cache->layers[attrs.layer];
  const int64_t tokens = q.shape[0], q_heads = q.shape[1], dim = q.shape[2];
  const int64_t kv_heads = k.shape[1];
  const int64_t group = q_heads / kv_heads;
  const int32_t* pos = positions.as<const int32_t>();
  const int64_t pos_step = positions.strides[0];
  int64_t work = 0;
  for (int64_t t = 0; t < tokens; ++t) {
    const int32_t p = pos[t * pos_step];
    if (p < 0 || p >= layer.length) {
      return InvalidInput("position " + std::to_string(p) + " of token " + std::to_string(t) +
                          " is outside the KV cache's valid length " +
                          std::to_string(layer.length));
    }
    WriteRow(layer, k.as<const float>() + t * kv_heads * dim, kv_heads * dim, layer.key(p));
    WriteRow(layer, v.as<const float>() + t * kv_heads * dim, kv_heads * dim, layer.value(p));
    work += (p + 1) * q_heads * dim;
  }
  const int64_t units = tokens * q_heads;
  auto attend = [&](int64_t u) {
    const int64_t t = u / q_heads, h = u % q_heads;
    HWY_DYNAMIC_DISPATCH(Attend)
    (q.as<const float>() + u * dim, layer, h / group, pos[t * pos_step], attrs.scale,
     args.out.as<float>() + u * dim);
  };
  if (work < (1 << 16) || units < 2) {
    for (int64_t u = 0; u < units; ++u) attend(u);
  } else {
    args.pool.Run([&](int32_t thread, int32_t threads) {
      for (int64_t u = thread; u < units; u += threads) attend(u);
    });
  }
  return Ok();
}

}  // namespace kite::cpu
#endif  // HWY_ONCE
