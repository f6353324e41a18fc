// NumPy broadcasting of add and mul's two inputs over their output's shape.
#pragma once

#include <cstdint>
#include <vector>

#include "backends/npusim/kernels.h"

namespace kite::npusim {

// Calls fn(output index, a index, b index) for every element, row-major.
template <typename Fn>
inline void ForEachBroadcast(const Broadcast& shape, Fn&& fn) {
  const size_t rank = shape.shape.size();
  std::vector<int64_t> index(rank, 0);
  int64_t total = 1;
  for (int64_t d : shape.shape) total *= d;
  int64_t ia = 0, ib = 0;
  for (int64_t i = 0; i < total; ++i) {
    fn(i, ia, ib);
    for (size_t d = rank; d-- > 0;) {
      ia += shape.a_strides[d];
      ib += shape.b_strides[d];
      if (++index[d] < shape.shape[d]) break;
      ia -= shape.a_strides[d] * shape.shape[d];
      ib -= shape.b_strides[d] * shape.shape[d];
      index[d] = 0;
    }
  }
}

}  // namespace kite::npusim
