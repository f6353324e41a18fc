// Index walking over strided f32 tensors, shared by ref's kernels. Fixed-size index arrays
// (graphs cap rank at kMaxRank) keep kernels free of allocation.
#pragma once

#include <array>
#include <cstdint>

#include "backends/backend.h"

namespace kite::ref {

using Index = std::array<int64_t, kMaxRank>;

// Calls fn(index) for every index of the first `rank` dims of `shape`, in row-major order.
template <typename Fn>
void ForEachIndex(const std::vector<int64_t>& shape, int rank, Fn&& fn) {
  Index index{};
  while (true) {
    fn(index);
    int d = rank - 1;
    while (d >= 0 && ++index[d] == shape[d]) index[d--] = 0;
    if (d < 0) return;
  }
}

// Element offset of `index` in `t`. When t has fewer dims than the index (broadcasting), t's
// dims align with the index's last ones, and dims of size 1 repeat.
inline int64_t OffsetOf(const TensorArg& t, const Index& index, int index_rank) {
  const int rank = static_cast<int>(t.shape.size());
  int64_t offset = 0;
  for (int d = 0; d < rank; ++d) {
    const int64_t i = index[d + index_rank - rank];
    if (t.shape[d] != 1) offset += i * t.strides[d];
  }
  return offset;
}

// Calls fn(row, offset) for each row (every index but the last dim) of `t`: `row` counts rows
// in row-major order, `offset` is the element offset of the row's first element. Elements
// within a row are t.strides.back() apart.
template <typename Fn>
void ForEachRow(const TensorArg& t, Fn&& fn) {
  const int rank = static_cast<int>(t.shape.size());
  int64_t row = 0;
  ForEachIndex(t.shape, rank - 1, [&](const Index& index) { fn(row++, OffsetOf(t, index, rank)); });
}

// out[i] = fn(x[i]) over same-shape tensors; out is contiguous.
template <typename Fn>
void Unary(const TensorArg& x, const TensorArg& out, Fn&& fn) {
  const float* src = x.as<const float>();
  float* dst = out.as<float>();
  const int rank = static_cast<int>(x.shape.size());
  int64_t i = 0;
  ForEachIndex(x.shape, rank, [&](const Index& index) {
    dst[i++] = fn(static_cast<double>(src[OffsetOf(x, index, rank)]));
  });
}

// out[i] = fn(a[i], b[i]) with NumPy broadcasting to out's shape; out is contiguous.
template <typename Fn>
void Binary(const TensorArg& a, const TensorArg& b, const TensorArg& out, Fn&& fn) {
  const float* pa = a.as<const float>();
  const float* pb = b.as<const float>();
  float* dst = out.as<float>();
  const int rank = static_cast<int>(out.shape.size());
  int64_t i = 0;
  ForEachIndex(out.shape, rank, [&](const Index& index) {
    dst[i++] = fn(static_cast<double>(pa[OffsetOf(a, index, rank)]),
                  static_cast<double>(pb[OffsetOf(b, index, rank)]));
  });
}

}  // namespace kite::ref
