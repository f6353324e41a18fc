#include <cmath>
#include <numbers>

#include "backends/ref/kernels.h"
#include "backends/shared_kernels.h"

namespace kite::ref {

// x [T, H, D] f32, positions [T] i32 -> out [T, H, D]. Pair i of a head is (x[i], x[i + r/2])
// in neox mode and (x[2i], x[2i+1]) interleaved, with r = rotary_dim; it turns by the angle
// position · inv_freq[i], its cos and sin times attention_factor. Dims from r on are copied.
Status Run(const RopeAttrs& attrs, const KernelArgs& args) {
  const TensorArg& x = args.in[0];
  const TensorArg& positions = args.in[1];
  const int64_t tokens = x.shape[0];
  const int64_t heads = x.shape[1];
  const int64_t dim = x.shape[2];
  const int64_t half = attrs.rotary_dim / 2;
  const float* xs = x.as<const float>();
  float* out = args.out.as<float>();
  for (int64_t t = 0; t < tokens; ++t) {
    const int32_t position = PositionAt(positions, t);
    for (int64_t h = 0; h < heads; ++h) {
      const float* in_head = xs + t * x.strides[0] + h * x.strides[1];
      float* out_head = out + (t * heads + h) * dim;
      auto in = [&](int64_t i) { return static_cast<double>(in_head[i * x.strides[2]]); };
      for (int64_t i = attrs.rotary_dim; i < dim; ++i) out_head[i] = in_head[i * x.strides[2]];
      for (int64_t i = 0; i < half; ++i) {
        const double angle = position * RopeInverseFrequency(attrs, i);
        const double cos = attrs.attention_factor * std::cos(angle);
        const double sin = attrs.attention_factor * std::sin(angle);
        const int64_t first = attrs.mode == RopeMode::kNeox ? i : 2 * i;
        const int64_t second = attrs.mode == RopeMode::kNeox ? i + half : 2 * i + 1;
        out_head[first] = static_cast<float>(in(first)*cos - in(second)*sin);
        out_head[second] = static_cast<float>(in(first)*sin + in(second)*cos);
      }
    }
  }
  return Ok();
}

}  // namespace kite::ref
