// The one O(n³) kernel of quant/dense_linalg.h, C -= A·B, compiled per SIMD target (Highway
// foreach_target) and dispatched at run time. A tile of 4 rows x 2 vectors of C stays in
// registers while k runs; each step loads two vectors of a row of B and broadcasts 4 of A.
#include <algorithm>

#define HWY_DISABLED_TARGETS (HWY_SSSE3 | HWY_SSE4)
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "quant/dense_linalg_kernels.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "quant/dense_linalg.h"

HWY_BEFORE_NAMESPACE();
namespace kite {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Rows [0, m) of C -= A·B (the caller splits m into tiles).
void SubtractProductRows(float* c, int64_t ldc, const float* a, int64_t lda, const float* b,
                         int64_t ldb, int64_t m, int64_t n, int64_t k) {
  const hn::ScalableTag<float> d;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  const int64_t step = 2 * lanes;
  int64_t i = 0;
  for (; i + 4 <= m; i += 4) {
    const float* a0 = a + i * lda;
    int64_t j = 0;
    for (; j + step <= n; j += step) {
      float* c0 = c + i * ldc + j;
      auto c00 = hn::LoadU(d, c0), c01 = hn::LoadU(d, c0 + lanes);
      auto c10 = hn::LoadU(d, c0 + ldc), c11 = hn::LoadU(d, c0 + ldc + lanes);
      auto c20 = hn::LoadU(d, c0 + 2 * ldc), c21 = hn::LoadU(d, c0 + 2 * ldc + lanes);
      auto c30 = hn::LoadU(d, c0 + 3 * ldc), c31 = hn::LoadU(d, c0 + 3 * ldc + lanes);
      const float* bp = b + j;
      for (int64_t p = 0; p < k; ++p, bp += ldb) {
        const auto b0 = hn::LoadU(d, bp), b1 = hn::LoadU(d, bp + lanes);
        auto x = hn::Set(d, a0[p]);
        c00 = hn::NegMulAdd(x, b0, c00);
        c01 = hn::NegMulAdd(x, b1, c01);
        x = hn::Set(d, a0[lda + p]);
        c10 = hn::NegMulAdd(x, b0, c10);
        c11 = hn::NegMulAdd(x, b1, c11);
        x = hn::Set(d, a0[2 * lda + p]);
        c20 = hn::NegMulAdd(x, b0, c20);
        c21 = hn::NegMulAdd(x, b1, c21);
        x = hn::Set(d, a0[3 * lda + p]);
        c30 = hn::NegMulAdd(x, b0, c30);
        c31 = hn::NegMulAdd(x, b1, c31);
      }
      hn::StoreU(c00, d, c0);
      hn::StoreU(c01, d, c0 + lanes);
      hn::StoreU(c10, d, c0 + ldc);
      hn::StoreU(c11, d, c0 + ldc + lanes);
      hn::StoreU(c20, d, c0 + 2 * ldc);
      hn::StoreU(c21, d, c0 + 2 * ldc + lanes);
      hn::StoreU(c30, d, c0 + 3 * ldc);
      hn::StoreU(c31, d, c0 + 3 * ldc + lanes);
    }
    for (int64_t r = i; r < i + 4; ++r) {  // the columns left over
      for (int64_t p = 0; p < k; ++p) {
        const float x = a[r * lda + p];
        for (int64_t jj = j; jj < n; ++jj) c[r * ldc + jj] -= x * b[p * ldb + jj];
      }
    }
  }
  for (; i < m; ++i) {  // the rows left over, a vector at a time
    const float* ai = a + i * lda;
    float* ci = c + i * ldc;
    int64_t j = 0;
    for (; j + lanes <= n; j += lanes) {
      auto acc = hn::LoadU(d, ci + j);
      const float* bp = b + j;
      for (int64_t p = 0; p < k; ++p, bp += ldb) {
        acc = hn::NegMulAdd(hn::Set(d, ai[p]), hn::LoadU(d, bp), acc);
      }
      hn::StoreU(acc, d, ci + j);
    }
    for (int64_t p = 0; p < k; ++p) {
      for (int64_t jj = j; jj < n; ++jj) ci[jj] -= ai[p] * b[p * ldb + jj];
    }
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace kite
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kite {

HWY_EXPORT(SubtractProductRows);

void SubtractProduct(ThreadPool* pool, float* c, int64_t ldc, const float* a, int64_t lda,
                     const float* b, int64_t ldb, int64_t m, int64_t n, int64_t k) {
  if (m <= 0 || n <= 0 || k <= 0) return;
  // Column panels of B of at most kPanel columns and kDepth rows stay in L2 while a thread
  // walks its rows of C through them.
  constexpr int64_t kPanel = 512, kDepth = 256, kRows = 32;
  auto rows = [&](int64_t begin, int64_t end) {
    for (int64_t p0 = 0; p0 < k; p0 += kDepth) {
      const int64_t kk = std::min(kDepth, k - p0);
      for (int64_t j0 = 0; j0 < n; j0 += kPanel) {
        HWY_DYNAMIC_DISPATCH(SubtractProductRows)
        (c + begin * ldc + j0, ldc, a + begin * lda + p0, lda, b + p0 * ldb + j0, ldb, end - begin,
         std::min(kPanel, n - j0), kk);
      }
    }
  };
  const int64_t tiles = (m + kRows - 1) / kRows;
  if (pool == nullptr || tiles == 1) {
    rows(0, m);
    return;
  }
  pool->ParallelForChunks(
      tiles, 1, [&](int64_t begin, int64_t end) { rows(begin * kRows, std::min(m, end * kRows)); });
}

}  // namespace kite
#endif  // HWY_ONCE
