#include <cmath>

#include "backends/ref/kernels.h"
#include "backends/ref/walk.h"

namespace kite::ref {

// silu(gate) · up
Status Run(const SwiGluAttrs&, const KernelArgs& args) {
  Binary(args.in[0], args.in[1], args.out,
         [](double gate, double up) { return gate / (1.0 + std::exp(-gate)) * up; });
  return Ok();
}

}  // namespace kite::ref
