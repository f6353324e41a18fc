#include <cmath>

#include "backends/ref/kernels.h"
#include "backends/ref/walk.h"
#include "tensor/dequantize.h"

namespace kite::ref {

// Scratch: the weight as f32 [D].
uint64_t Scratch(const RmsNormAttrs&, const Graph& graph, const Node& node) {
  return static_cast<uint64_t>(graph.value(node.inputs[1]).shape[0]) * sizeof(float);
}

// out = x / sqrt(mean(x²) + eps) · weight, per row of the last dim.
Status Run(const RmsNormAttrs& attrs, const KernelArgs& args) {
  const TensorArg& x = args.in[0];
  const TensorArg& weight = args.in[1];
  const int64_t d = x.shape.back();
  float* w = reinterpret_cast<float*>(args.context.scratch.data());
  KITE_RETURN_IF_ERROR(Dequantize(weight.dtype, weight.data, w, d));
  const float* xs = x.as<const float>();
  const int64_t step = x.strides.back();
  float* out = args.out.as<float>();
  ForEachRow(x, [&](int64_t row, int64_t offset) {
    double sum_squares = 0.0;
    for (int64_t i = 0; i < d; ++i) {
      const double v = xs[offset + i * step];
      sum_squares += v * v;
    }
    const double inv_rms = 1.0 / std::sqrt(sum_squares / d + attrs.eps);
    for (int64_t i = 0; i < d; ++i) {
      out[row * d + i] = static_cast<float>(xs[offset + i * step] * inv_rms * w[i]);
    }
  });
  return Ok();
}

}  // namespace kite::ref
