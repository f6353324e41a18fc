// NumPy broadcasting of add and mul's two inputs over their output's shape.
#include <algorithm>

#include "backends/npusim/kernels.h"

namespace kite::npusim {

Broadcast MakeBroadcast(std::span<const int64_t> a, std::span<const int64_t> b) {
  const size_t rank = std::max(a.size(), b.size());
  Broadcast out{.shape = std::vector<int64_t>(rank, 1),
                .a_strides = std::vector<int64_t>(rank, 0),
                .b_strides = std::vector<int64_t>(rank, 0)};
  // Dims align from the right; a dim of 1 (or a missing one) repeats: stride 0.
  auto strides = [&](std::span<const int64_t> shape, std::vector<int64_t>& s) {
    int64_t stride = 1;
    for (size_t i = 0; i < shape.size(); ++i) {
      const size_t dim = shape.size() - 1 - i;
      const size_t at = rank - 1 - i;
      s[at] = shape[dim] == 1 ? 0 : stride;
      out.shape[at] = std::max(out.shape[at], shape[dim]);
      stride *= shape[dim];
    }
  };
  strides(a, out.a_strides);
  strides(b, out.b_strides);
  return out;
}

}  // namespace kite::npusim
