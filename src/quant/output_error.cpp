#include "quant/output_error.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "quant/dense_linalg.h"

namespace kite {

Result<SampleColumns> TransposeSamples(std::string_view name, const LinearInputStats& stats,
                                       int64_t in, int64_t max_rows) {
  const std::string what = "weight '" + std::string(name) + "'";
  if (stats.samples_rows <= 0 ||
      static_cast<int64_t>(stats.samples.size()) != stats.samples_rows * in) {
    return InvalidInput(what + ": the calibration statistics hold " +
                        std::to_string(stats.samples_rows) + " sampled input rows of " +
                        std::to_string(stats.samples.size()) + " values, expected rows of " +
                        std::to_string(in) + " (calibrate with samples requested)");
  }
  SampleColumns x;
  x.in = in;
  x.rows = max_rows > 0 ? std::min(max_rows, stats.samples_rows) : stats.samples_rows;
  x.xt.resize(in * x.rows);
  for (int64_t t = 0; t < x.rows; ++t) {
    const int64_t source = t * stats.samples_rows / x.rows;  // evenly over the samples
    const float* row = stats.samples.data() + source * in;
    for (int64_t j = 0; j < in; ++j) x.xt[j * x.rows + t] = row[j];
  }
  return x;
}

void RowOutputSquaredErrors(std::span<const float> delta, int64_t out, const SampleColumns& x,
                            std::span<double> row_error, ThreadPool* pool) {
  std::vector<float> y(out * x.rows, 0.0f);  // [out, rows]: -(delta · xᵀ)
  SubtractProduct(pool, y.data(), x.rows, delta.data(), x.in, x.xt.data(), x.rows, out, x.rows,
                  x.in);
  for (int64_t r = 0; r < out; ++r) {
    double s = 0.0;
    for (int64_t t = 0; t < x.rows; ++t) s += double{y[r * x.rows + t]} * y[r * x.rows + t];
    row_error[r] = s;
  }
}

double OutputSquaredError(std::span<const float> delta, int64_t out, const SampleColumns& x,
                          ThreadPool* pool) {
  std::vector<double> rows(out);
  RowOutputSquaredErrors(delta, out, x, rows, pool);
  double total = 0.0;
  for (double r : rows) total += r;
  return total;
}

std::vector<float> ClipRatios(int32_t count, float lowest) {
  std::vector<float> ratios;
  for (int32_t i = 0; i < count; ++i) {
    ratios.push_back(count == 1 ? 1.0f
                                : 1.0f - (1.0f - lowest) * i / static_cast<float>(count - 1));
  }
  return ratios;
}

Result<ClipSearchResult> SearchClipRatios(std::string_view name, std::span<const float> weight,
                                          int64_t out, const SampleColumns& x,
                                          const WeightGrid& grid, std::span<const float> ratios,
                                          bool per_group, ThreadPool* pool) {
  const int64_t in = x.in;
  KITE_RETURN_IF_ERROR(CheckWeight(name, weight, out, in));
  const std::string what = "clip search of weight '" + std::string(name) + "'";
  Status columns = grid.CheckColumns(in);
  if (!columns) return std::unexpected(std::move(columns.error()).WithContext(what));
  for (float r : ratios) {
    if (!(r > 0.0f && r <= 1.0f)) {
      return InvalidInput(what + ": clip ratio " + std::to_string(r) + ", expected in (0, 1]");
    }
  }
  const int64_t group = grid.GroupColumns(in), groups = in / group;
  const int64_t slots = per_group ? groups : 1;
  ClipSearchResult result;
  result.ratio.assign(out * slots, 1.0f);
  result.clipped.resize(out * in);
  result.quantized.resize(out * in);
  // Rows in tiles of kTile: one product per group (or row) scores the tile's candidates.
  constexpr int64_t kTile = 16;
  auto rows = [&](int64_t begin, int64_t end) {
    std::vector<float> q(kTile * in), y(kTile * x.rows);
    std::vector<double> best(kTile * slots);
    for (int64_t r0 = begin; r0 < end; r0 += kTile) {
      const int64_t tile = std::min(kTile, end - r0);
      std::fill(best.begin(), best.end(), std::numeric_limits<double>::infinity());
      for (float ratio : ratios) {
        for (int64_t t = 0; t < tile; ++t) {
          const std::span<float> row = std::span(q).subspan(t * in, in);
          const std::span<const float> w = weight.subspan((r0 + t) * in, in);
          std::copy(w.begin(), w.end(), row.begin());
          grid.QuantizeRow(row, ratio);
          for (int64_t j = 0; j < in; ++j) row[j] -= w[j];  // the change
        }
        for (int64_t s = 0; s < slots; ++s) {
          const int64_t j0 = per_group ? s * group : 0, k = per_group ? group : in;
          std::fill(y.begin(), y.end(), 0.0f);
          SubtractProduct(nullptr, y.data(), x.rows, q.data() + j0, in, x.xt.data() + j0 * x.rows,
                          x.rows, tile, x.rows, k);
          for (int64_t t = 0; t < tile; ++t) {
            double e = 0.0;
            for (int64_t i = 0; i < x.rows; ++i) e += double{y[t * x.rows + i]} * y[t * x.rows + i];
            if (e < best[t * slots + s]) {
              best[t * slots + s] = e;
              result.ratio[(r0 + t) * slots + s] = ratio;
            }
          }
        }
      }
    }
    // The chosen clips: W clamped to the range each covers, and fake-quantized with it.
    for (int64_t r = begin; r < end; ++r) {
      const std::span<const float> w = weight.subspan(r * in, in);
      for (int64_t g = 0; g < groups; ++g) {
        const float ratio = result.ratio[r * slots + (per_group ? g : 0)];
        const std::span<const float> values = w.subspan(g * group, group);
        const GroupScale s = grid.Fit(values, ratio);
        float* clipped = result.clipped.data() + r * in + g * group;
        float* quantized = result.quantized.data() + r * in + g * group;
        for (int64_t j = 0; j < group; ++j) {
          clipped[j] = grid.Clamp(s, values[j]);
          quantized[j] = grid.Value(s, grid.Code(s, values[j]));
        }
      }
    }
  };
  if (pool != nullptr) {
    pool->ParallelForChunks(out, kTile, rows);
  } else {
    rows(0, out);
  }
  return result;
}

}  // namespace kite
