#include "quant/dense_linalg.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace kite {

namespace {

constexpr int64_t kBlock = 128;  // panel width: the diagonal blocks are factored unblocked

}  // namespace

Status CholeskyLower(std::span<float> a, int64_t n, ThreadPool* pool) {
  std::vector<float> inv(kBlock * kBlock);    // L11⁻¹ of the current panel
  std::vector<float> inv_t(kBlock * kBlock);  // its transpose
  std::vector<float> panel_t;                 // the panel below the diagonal, transposed
  for (int64_t k0 = 0; k0 < n; k0 += kBlock) {
    const int64_t kb = std::min(kBlock, n - k0);
    // The diagonal block (already updated by the panels before it), unblocked, double sums.
    for (int64_t j = k0; j < k0 + kb; ++j) {
      double s = a[j * n + j];
      for (int64_t p = k0; p < j; ++p) s -= double{a[j * n + p]} * a[j * n + p];
      if (!(s > 0.0)) {
        return InvalidInput("matrix of " + std::to_string(n) + " columns is not positive " +
                            "definite: pivot of column " + std::to_string(j) + " is " +
                            std::to_string(s));
      }
      const double d = std::sqrt(s);
      a[j * n + j] = static_cast<float>(d);
      for (int64_t i = j + 1; i < k0 + kb; ++i) {
        double t = a[i * n + j];
        for (int64_t p = k0; p < j; ++p) t -= double{a[i * n + p]} * a[j * n + p];
        a[i * n + j] = static_cast<float>(t / d);
      }
    }
    const int64_t s0 = k0 + kb, rest = n - s0;
    if (rest == 0) break;
    // L21 = A21 · L11⁻ᵀ: one product with the small inverse.
    std::fill(inv.begin(), inv.end(), 0.0f);
    std::vector<float> l11(kb * kb);
    for (int64_t r = 0; r < kb; ++r) {
      for (int64_t c = 0; c <= r; ++c) l11[r * kb + c] = a[(k0 + r) * n + k0 + c];
    }
    InvertLower(l11, std::span(inv).first(kb * kb), kb, nullptr);
    for (int64_t r = 0; r < kb; ++r) {
      for (int64_t c = 0; c < kb; ++c) inv_t[r * kb + c] = -inv[c * kb + r];
    }
    panel_t.assign(kb * rest, 0.0f);
    std::vector<float> panel(rest * kb, 0.0f);
    // panel = 0 - A21 · (-L11⁻ᵀ)
    SubtractProduct(pool, panel.data(), kb, a.data() + s0 * n + k0, n, inv_t.data(), kb, rest, kb,
                    kb);
    for (int64_t i = 0; i < rest; ++i) {
      for (int64_t c = 0; c < kb; ++c) {
        a[(s0 + i) * n + k0 + c] = panel[i * kb + c];
        panel_t[c * rest + i] = panel[i * kb + c];
      }
    }
    // The trailing matrix's lower triangle: A22 -= L21 · L21ᵀ, by row tiles (a tile of rows
    // [r0, r1) needs columns [0, r1)).
    constexpr int64_t kRows = 32;
    const int64_t tiles = (rest + kRows - 1) / kRows;
    auto update = [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) {
        const int64_t r0 = t * kRows, r1 = std::min(rest, r0 + kRows);
        SubtractProduct(nullptr, a.data() + (s0 + r0) * n + s0, n, panel.data() + r0 * kb, kb,
                        panel_t.data(), rest, r1 - r0, r1, kb);
      }
    };
    if (pool != nullptr) {
      pool->ParallelForChunks(tiles, 1, update);
    } else {
      update(0, tiles);
    }
  }
  for (int64_t i = 0; i < n; ++i)
    std::fill(a.begin() + i * n + i + 1, a.begin() + (i + 1) * n, 0.0f);
  return Ok();
}

void InvertLower(std::span<const float> l, std::span<float> inv, int64_t n, ThreadPool* pool) {
  std::fill(inv.begin(), inv.end(), 0.0f);
  const int64_t blocks = (n + kBlock - 1) / kBlock;
  // Column block J of the inverse solves L · X = E_J from its diagonal block down; it reads
  // only L and its own columns, so blocks run in parallel.
  auto columns = [&](int64_t begin, int64_t end) {
    std::vector<float> x(kBlock * kBlock);
    for (int64_t jb_index = begin; jb_index < end; ++jb_index) {
      const int64_t j0 = jb_index * kBlock, jb = std::min(kBlock, n - j0);
      for (int64_t i0 = j0; i0 < n; i0 += kBlock) {
        const int64_t ib = std::min(kBlock, n - i0);
        // x = E - L[I, j0:i0] · inv[j0:i0, J]
        std::fill(x.begin(), x.end(), 0.0f);
        if (i0 == j0) {
          for (int64_t r = 0; r < ib; ++r) x[r * jb + r] = 1.0f;
        }
        SubtractProduct(nullptr, x.data(), jb, l.data() + i0 * n + j0, n, inv.data() + j0 * n + j0,
                        n, ib, jb, i0 - j0);
        // Forward substitution with L[I, I]: row r takes the rows before it.
        for (int64_t r = 0; r < ib; ++r) {
          float* row = x.data() + r * jb;
          SubtractProduct(nullptr, row, jb, l.data() + (i0 + r) * n + i0, n, x.data(), jb, 1, jb,
                          r);
          const float d = l[(i0 + r) * n + i0 + r];
          for (int64_t c = 0; c < jb; ++c) row[c] /= d;
        }
        for (int64_t r = 0; r < ib; ++r) {
          std::copy_n(x.data() + r * jb, jb, inv.data() + (i0 + r) * n + j0);
        }
      }
    }
  };
  if (pool != nullptr) {
    pool->ParallelForChunks(blocks, 1, columns);
  } else {
    columns(0, blocks);
  }
}

Status InverseCholeskyUpper(std::span<float> h, int64_t n, ThreadPool* pool) {
  // Reversing both indices of a row-major square matrix reverses its flat array.
  std::reverse(h.begin(), h.end());
  KITE_RETURN_IF_ERROR(CholeskyLower(h, n, pool));
  std::vector<float> inv(h.size());
  InvertLower(h, inv, n, pool);
  std::reverse_copy(inv.begin(), inv.end(), h.begin());
  return Ok();
}

}  // namespace kite
