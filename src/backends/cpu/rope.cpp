#include <cmath>
#include <vector>

#include "backends/cpu/kernels.h"
#include "backends/shared_kernels.h"

namespace kite::cpu {

SupportResult Support(const RopeAttrs& attrs, const Graph& graph, const Node& node) {
  const Value& x = graph.value(node.inputs[0]);
  if (!x.contiguous()) return SupportResult::No("input '" + x.name + "' is a strided view");
  if (attrs.rotary_dim % 2 != 0 || attrs.rotary_dim > x.shape[2]) {
    return SupportResult::No("rotary_dim " + std::to_string(attrs.rotary_dim) +
                             " is odd or above the head size");
  }
  return SupportResult::Yes();
}

// Scratch: the table of cos and sin [T, rotary_dim / 2] each, f32.
uint64_t Scratch(const RopeAttrs& attrs, const Graph& graph, const Node& node) {
  return static_cast<uint64_t>(graph.value(node.inputs[0]).shape[0]) * attrs.rotary_dim *
         sizeof(float);
}

// x [T, H, D] f32, positions [T] -> out [T, H, D]. The angles of each token are computed once
// (in double, as ref does; sincos gives both from one argument reduction), split by tokens over
// the pool like the rotation (a 512-token table serially was 8% of a 135M prefill), then every
// head turns by the same table: the inner loops are plain f32 multiply-adds over contiguous
// pairs that the compiler vectorizes.
Status Run(const RopeAttrs& attrs, const KernelArgs& args) {
  const TensorArg& x = args.in[0];
  const TensorArg& positions = args.in[1];
  const int64_t tokens = x.shape[0], heads = x.shape[1], dim = x.shape[2];
  const int64_t half = attrs.rotary_dim / 2;
  float* cos_table = reinterpret_cast<float*>(args.context.scratch.data());  // [T, half]
  float* sin_table = cos_table + tokens * half;                              // [T, half]
  const std::vector<double> inv_freq = RopeInverseFrequencies(attrs);
  auto angles = [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int32_t position = PositionAt(positions, t);
      for (int64_t i = 0; i < half; ++i) {
        const double angle = position * inv_freq[i];
        double sin = 0, cos = 0;
        ::sincos(angle, &sin, &cos);
        cos_table[t * half + i] = static_cast<float>(attrs.attention_factor * cos);
        sin_table[t * half + i] = static_cast<float>(attrs.attention_factor * sin);
      }
    }
  };
  if (tokens * half < (1 << 10)) {
    angles(0, tokens);
  } else {
    args.pool.ParallelFor(tokens, angles);
  }
  const float* xs = x.as<const float>();
  float* out = args.out.as<float>();
  const bool neox = attrs.mode == RopeMode::kNeox;
  auto rotate = [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {  // row = t * heads + h
      const float* c = cos_table + (row / heads) * half;
      const float* s = sin_table + (row / heads) * half;
      const float* in = xs + row * dim;
      float* o = out + row * dim;
      if (neox) {
        for (int64_t i = 0; i < half; ++i) {
          o[i] = in[i] * c[i] - in[i + half] * s[i];
          o[i + half] = in[i] * s[i] + in[i + half] * c[i];
        }
      } else {
        for (int64_t i = 0; i < half; ++i) {
          o[2 * i] = in[2 * i] * c[i] - in[2 * i + 1] * s[i];
          o[2 * i + 1] = in[2 * i] * s[i] + in[2 * i + 1] * c[i];
        }
      }
      for (int64_t i = attrs.rotary_dim; i < dim; ++i) o[i] = in[i];
    }
  };
  if (tokens * heads * dim < (1 << 15)) {
    rotate(0, tokens * heads);
  } else {
    args.pool.ParallelFor(tokens * heads, rotate);
  }
  return Ok();
}

}  // namespace kite::cpu
