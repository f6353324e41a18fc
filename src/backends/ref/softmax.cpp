#include <algorithm>
#include <cmath>
#include <limits>

#include "backends/ref/kernels.h"
#include "backends/ref/walk.h"

namespace kite::ref {

// Over the last dim, shifted by the row's max so exp never overflows.
Status Run(const SoftmaxAttrs&, const KernelArgs& args) {
  const TensorArg& x = args.in[0];
  const float* xs = x.as<const float>();
  const int64_t n = x.shape.back();
  const int64_t step = x.strides.back();
  float* out = args.out.as<float>();
  ForEachRow(x, [&](int64_t row, int64_t offset) {
    double max = -std::numeric_limits<double>::infinity();
    for (int64_t i = 0; i < n; ++i) max = std::max(max, static_cast<double>(xs[offset + i * step]));
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) sum += std::exp(xs[offset + i * step] - max);
    for (int64_t i = 0; i < n; ++i) {
      out[row * n + i] = static_cast<float>(std::exp(xs[offset + i * step] - max) / sum);
    }
  });
  return Ok();
}

}  // namespace kite::ref
