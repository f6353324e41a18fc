#include <cmath>

#include "backends/ref/kernels.h"
#include "backends/ref/walk.h"

namespace kite::ref {

// cap · tanh(x / cap)
Status Run(const SoftcapAttrs& attrs, const KernelArgs& args) {
  const double cap = attrs.cap;
  Unary(args.in[0], args.out, [cap](double x) { return cap * std::tanh(x / cap); });
  return Ok();
}

}  // namespace kite::ref
