// Dense float linear algebra for the quantization algorithms (GPTQ's Hessian inverse, the
// Hadamard and output-error products): row-major matrices, blocked so that the O(n³) work runs
// in one SIMD kernel (C -= A·B, dense_linalg_kernels.cpp) on the thread pool.
#pragma once

#include <cstdint>
#include <span>

#include "base/status.h"
#include "base/thread_pool.h"

namespace kite {

// C [m, n] -= A [m, k] · B [k, n]; leading dimensions (row strides) lda, ldb, ldc. Runs on
// `pool` (row tiles) when given.
void SubtractProduct(ThreadPool* pool, float* c, int64_t ldc, const float* a, int64_t lda,
                     const float* b, int64_t ldb, int64_t m, int64_t n, int64_t k);

// The lower Cholesky factor L of the symmetric positive definite a [n, n] (a = L·Lᵀ), in place:
// the lower triangle holds L, the strict upper triangle is zeroed. An error names the first
// column whose pivot is not positive (a is not positive definite in float precision).
Status CholeskyLower(std::span<float> a, int64_t n, ThreadPool* pool);

// inv [n, n] = the inverse of the lower triangular l [n, n] (non-zero diagonal); its strict
// upper triangle is zero. Column blocks are independent: they run on `pool`.
void InvertLower(std::span<const float> l, std::span<float> inv, int64_t n, ThreadPool* pool);

// The upper triangular U with h⁻¹ = Uᵀ·U, for the symmetric positive definite h [n, n], in
// place (GPTQ's "Cholesky of the inverse"): U = P·L⁻¹·P with L the lower Cholesky factor of
// P·h·P (P reverses the order), which costs one factorization and one triangular inverse.
Status InverseCholeskyUpper(std::span<float> h, int64_t n, ThreadPool* pool);

}  // namespace kite
