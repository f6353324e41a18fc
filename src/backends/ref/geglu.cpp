#include <cmath>
#include <numbers>

#include "backends/ref/kernels.h"
#include "backends/ref/walk.h"

namespace kite::ref {

// gelu_tanh(gate) · up, gelu as ref's gelu.cpp computes it (tanh approximation).
Status Run(const GeGluAttrs&, const KernelArgs& args) {
  const double k = std::sqrt(2.0 / std::numbers::pi);
  Binary(args.in[0], args.in[1], args.out, [k](double gate, double up) {
    return 0.5 * gate * (1.0 + std::tanh(k * (gate + 0.044715 * gate * gate * gate))) * up;
  });
  return Ok();
}

}  // namespace kite::ref
