// GPTQ (Frantar et al. 2022, "GPTQ: Accurate Post-Training Quantization for Generative
// Pre-trained Transformers"): quantizes a linear layer's weight W [out, in] one input column at
// a time, spreading each column's rounding error over the columns not yet quantized so that
// the layer's output on the calibration inputs X moves as little as possible
// (min ||(Q - W)·Xᵀ||², with the Hessian H = 2·XᵀX).
//
//   H += λ·mean(diag H)·I              (damping; a column never seen gets diag 1 first)
//   U = upper Cholesky factor of H⁻¹   (H⁻¹ = Uᵀ·U; quant/dense_linalg.h)
//   for each column j (in blocks of block_size, the rest updated lazily once per block):
//     q_j = grid(w_j);  e = (w_j - q_j) / U_jj;  w_k -= e·U_jk for k > j
//
// Act-order takes the columns by decreasing diag(H) (the inputs with the most energy first)
// with static groups: every group's scale is fixed from the original weights in their stored
// order before anything moves, so the result is still a plain group-wise layout. Without
// act-order a group's scale is fitted from the (updated) values it holds when its first column
// comes up, and the block size is rounded to a multiple of the group so that a group never
// straddles two blocks. Each row of W is independent (rows split over the thread pool).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "base/thread_pool.h"
#include "quant/linear_stats.h"
#include "quant/weight_grid.h"

namespace kite {

struct GptqOptions {
  float damp = 0.01f;        // λ, relative to the mean of diag(H)
  int64_t block_size = 128;  // columns per lazy batch
  bool act_order = false;    // columns by decreasing diag(H), groups static
};

// What GPTQ needs from the inputs, shareable by the layers that read the same input (q, k, v;
// gate, up): the column order and the Cholesky factor of the damped Hessian's inverse in it.
struct GptqHessian {
  int64_t columns = 0;
  std::vector<int32_t> order;  // [in]: position -> input column (identity without act-order)
  std::vector<float> u;        // [in, in] upper triangular, in `order`
};

struct GptqResult {
  std::vector<float> weight;       // [out, in]: W fake-quantized (every value on the grid)
  std::vector<int32_t> codes;      // [out, in]: the grid code of each value
  std::vector<GroupScale> scales;  // [out, in / group columns]
  double proxy_loss = 0.0;         // Σ (w - q)² / U_jj²: the paper's objective, for reports
};

// From stats.gram (XᵀX, [in, in]); errors name `name` (the weight) and what is missing.
Result<GptqHessian> PrepareGptqHessian(std::string_view name, const LinearInputStats& stats,
                                       const GptqOptions& options, ThreadPool* pool);

// Quantizes weight [out, in] (row-major) onto `grid`; NaN/Inf weights are refused by name.
Result<GptqResult> GptqQuantize(std::string_view name, std::span<const float> weight, int64_t out,
                                const GptqHessian& hessian, const WeightGrid& grid,
                                const GptqOptions& options, ThreadPool* pool);

// Both steps.
Result<GptqResult> Gptq(std::string_view name, std::span<const float> weight, int64_t out,
                        const LinearInputStats& stats, const WeightGrid& grid,
                        const GptqOptions& options, ThreadPool* pool);

}  // namespace kite
