#include <cmath>
#include <numbers>

#include "backends/ref/kernels.h"
#include "backends/ref/walk.h"

namespace kite::ref {

Status Run(const GeluAttrs& attrs, const KernelArgs& args) {
  if (attrs.approx == GeluApprox::kErf) {
    Unary(args.in[0], args.out,
          [](double x) { return 0.5 * x * (1.0 + std::erf(x / std::numbers::sqrt2)); });
  } else {
    const double k = std::sqrt(2.0 / std::numbers::pi);
    Unary(args.in[0], args.out,
          [k](double x) { return 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x))); });
  }
  return Ok();
}

}  // namespace kite::ref
