#include <cmath>

#include "backends/ref/kernels.h"
#include "backends/ref/walk.h"

namespace kite::ref {

// silu(x) = x · sigmoid(x) = x / (1 + e^-x)
Status Run(const SiluAttrs&, const KernelArgs& args) {
  Unary(args.in[0], args.out, [](double x) { return x / (1.0 + std::exp(-x)); });
  return Ok();
}

}  // namespace kite::ref
