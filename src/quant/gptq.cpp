#include "quant/gptq.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "quant/dense_linalg.h"

namespace kite {

Result<GptqHessian> PrepareGptqHessian(std::string_view name, const LinearInputStats& stats,
                                       const GptqOptions& options, ThreadPool* pool) {
  const std::string what = "GPTQ of weight '" + std::string(name) + "'";
  const int64_t n = stats.columns;
  if (n <= 0 || static_cast<int64_t>(stats.gram.size()) != n * n) {
    return InvalidInput(what + ": the calibration statistics hold " +
                        std::to_string(stats.gram.size()) + " Gram values, expected " +
                        std::to_string(n) + "² (calibrate with the Gram matrix requested)");
  }
  if (!(options.damp >= 0.0f) || !std::isfinite(options.damp)) {
    return InvalidInput(what + ": damping " + std::to_string(options.damp) +
                        ", expected a finite value >= 0");
  }
  GptqHessian h;
  h.columns = n;
  // H = 2·XᵀX; an input never seen (diag 0) gets diag 1 so the factorization exists and its
  // column, coupled to nothing, is rounded to nearest.
  std::vector<double> diag(n);
  double mean = 0.0;
  for (int64_t j = 0; j < n; ++j) {
    const double d = 2.0 * stats.gram[j * n + j];
    if (!std::isfinite(d)) {
      return InvalidInput(what + ": Gram value at [" + std::to_string(j) + ", " +
                          std::to_string(j) + "] is not finite");
    }
    diag[j] = d > 0.0 ? d : 1.0;
    mean += diag[j];
  }
  mean /= static_cast<double>(n);
  h.order.resize(n);
  std::iota(h.order.begin(), h.order.end(), 0);
  if (options.act_order) {
    std::stable_sort(h.order.begin(), h.order.end(),
                     [&](int32_t a, int32_t b) { return diag[a] > diag[b]; });
  }
  h.u.resize(n * n);
  const double damp = options.damp * mean;
  for (int64_t a = 0; a < n; ++a) {
    const int64_t ra = h.order[a];
    for (int64_t b = 0; b < n; ++b) {
      const int64_t rb = h.order[b];
      h.u[a * n + b] = static_cast<float>(a == b ? diag[ra] + damp : 2.0 * stats.gram[ra * n + rb]);
    }
  }
  Status factored = InverseCholeskyUpper(h.u, n, pool);
  if (!factored) {
    return std::unexpected(
        std::move(factored.error()).WithContext(what + " (raise the damping, --gptq-damp)"));
  }
  return h;
}

Result<GptqResult> GptqQuantize(std::string_view name, std::span<const float> weight, int64_t out,
                                const GptqHessian& hessian, const WeightGrid& grid,
                                const GptqOptions& options, ThreadPool* pool) {
  const int64_t in = hessian.columns;
  KITE_RETURN_IF_ERROR(CheckWeight(name, weight, out, in));
  const std::string what = "GPTQ of weight '" + std::string(name) + "'";
  Status columns = grid.CheckColumns(in);
  if (!columns) return std::unexpected(std::move(columns.error()).WithContext(what));
  if (options.block_size <= 0) {
    return InvalidInput(what + ": block size " + std::to_string(options.block_size) +
                        ", expected > 0");
  }
  const int64_t group = grid.GroupColumns(in), groups = in / group;
  // Scales fixed up front: per channel (the whole row) and act-order's static groups.
  const bool fixed_scales = group == in || options.act_order;
  int64_t block = options.block_size;
  if (!fixed_scales) block = std::max<int64_t>(group, block / group * group);

  GptqResult result;
  result.weight.resize(out * in);
  result.codes.resize(out * in);
  result.scales.resize(out * groups);
  if (fixed_scales) {
    for (int64_t r = 0; r < out; ++r) {
      for (int64_t g = 0; g < groups; ++g) {
        result.scales[r * groups + g] = grid.Fit(weight.subspan(r * in + g * group, group), 1.0f);
      }
    }
  }
  // The weight with its columns in the Hessian's order; updated as columns are quantized.
  std::vector<float> w(out * in);
  for (int64_t r = 0; r < out; ++r) {
    for (int64_t a = 0; a < in; ++a) w[r * in + a] = weight[r * in + hessian.order[a]];
  }
  const std::vector<float>& u = hessian.u;
  std::vector<float> err(out * block);  // [out, block]: e of the block's columns
  std::vector<double> loss(out, 0.0);
  constexpr int64_t kRowGrain = 16;
  for (int64_t i1 = 0; i1 < in; i1 += block) {
    const int64_t i2 = std::min(in, i1 + block), width = i2 - i1;
    // A tile of rows at a time: each column's update of the rest of the block is one product
    // over the tile (the kernel's 4-row register tiles) instead of one per row.
    auto rows = [&](int64_t begin, int64_t end) {
      float e[kRowGrain];
      for (int64_t r0 = begin; r0 < end; r0 += kRowGrain) {
        const int64_t tile = std::min(kRowGrain, end - r0);
        for (int64_t i = i1; i < i2; ++i) {
          const int32_t column = hessian.order[i];
          const float d = u[i * in + i];
          for (int64_t t = 0; t < tile; ++t) {
            const int64_t r = r0 + t;
            float* row = w.data() + r * in;
            GroupScale& g = result.scales[r * groups + column / group];
            if (!fixed_scales && i % group == 0) {
              g = grid.Fit(std::span<const float>(row + i, group), 1.0f);
            }
            const int32_t code = grid.Code(g, row[i]);
            const float q = grid.Value(g, code);
            result.codes[r * in + column] = code;
            result.weight[r * in + column] = q;
            e[t] = (row[i] - q) / d;
            loss[r] += double{e[t]} * e[t];
            err[r * block + (i - i1)] = e[t];
          }
          // The rest of the block now; the columns after it once per block, below.
          SubtractProduct(nullptr, w.data() + r0 * in + i + 1, in, e, 1, u.data() + i * in + i + 1,
                          in, tile, i2 - i - 1, 1);
        }
      }
    };
    if (pool != nullptr) {
      pool->ParallelForChunks(out, kRowGrain, rows);
    } else {
      rows(0, out);
    }
    if (i2 < in) {
      SubtractProduct(pool, w.data() + i2, in, err.data(), block, u.data() + i1 * in + i2, in, out,
                      in - i2, width);
    }
  }
  for (double l : loss) result.proxy_loss += l;
  return result;
}

Result<GptqResult> Gptq(std::string_view name, std::span<const float> weight, int64_t out,
                        const LinearInputStats& stats, const WeightGrid& grid,
                        const GptqOptions& options, ThreadPool* pool) {
  const GptqHessian hessian = KITE_TRY(PrepareGptqHessian(name, stats, options, pool));
  return GptqQuantize(name, weight, out, hessian, grid, options, pool);
}

}  // namespace kite
