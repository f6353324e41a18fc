// Test fixture of the quantization algorithms' tests: a linear layer on which round-to-nearest
// fails the way it does in LLMs — a few input channels 50-100x larger than the rest (the
// activation outliers of LLM.int8 / SmoothQuant) and one weight 20x the others — with its
// calibration statistics, and the plain output error every algorithm claims to lower.
#pragma once

#include <cmath>
#include <cstdint>
#include <numbers>
#include <random>
#include <span>
#include <vector>

#include "quant/linear_stats.h"
#include "quant/weight_grid.h"

namespace kite::testing {

// Standard normal samples from mt19937 by Box-Muller (the same on every standard library).
class Gaussian {
 public:
  explicit Gaussian(uint32_t seed) : rng_(seed) {}
  float operator()() {
    const double u1 = (static_cast<double>(rng_()) + 1.0) / 4294967297.0;
    const double u2 = static_cast<double>(rng_()) / 4294967296.0;
    return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) *
                              std::cos(2.0 * std::numbers::pi * u2));
  }

 private:
  std::mt19937 rng_;
};

struct OutlierLayer {
  int64_t out = 0, in = 0, rows = 0;
  std::vector<float> x;  // [rows, in]
  std::vector<float> w;  // [out, in]
  LinearInputStats stats;
};

// Statistics of rows x [rows, in], as calibration fills them (every row sampled, Gram too).
inline LinearInputStats StatsOf(std::span<const float> x, int64_t rows, int64_t in) {
  LinearInputStats s;
  s.columns = in;
  s.rows_seen = rows;
  s.sum_sq.assign(in, 0.0);
  s.abs_sum.assign(in, 0.0);
  s.abs_max.assign(in, 0.0f);
  s.samples.assign(x.begin(), x.end());
  s.samples_rows = rows;
  s.gram.assign(in * in, 0.0);
  for (int64_t t = 0; t < rows; ++t) {
    const float* row = x.data() + t * in;
    for (int64_t j = 0; j < in; ++j) {
      s.sum_sq[j] += double{row[j]} * row[j];
      s.abs_sum[j] += std::fabs(row[j]);
      s.abs_max[j] = std::max(s.abs_max[j], std::fabs(row[j]));
      for (int64_t k = 0; k < in; ++k) s.gram[j * in + k] += double{row[j]} * row[k];
    }
  }
  return s;
}

inline OutlierLayer MakeOutlierLayer(int64_t out, int64_t in, int64_t rows, uint32_t seed) {
  OutlierLayer l;
  l.out = out;
  l.in = in;
  l.rows = rows;
  Gaussian g(seed);
  l.x.resize(rows * in);
  for (float& v : l.x) v = g();
  // Three outlier channels, 50x, 80x and 100x the rest (on every token, as in LLMs).
  const int64_t outliers[] = {in / 7, in / 2 + 1, in - 3};
  const float factors[] = {50.0f, 80.0f, 100.0f};
  for (int64_t t = 0; t < rows; ++t) {
    for (int o = 0; o < 3; ++o) l.x[t * in + outliers[o]] *= factors[o];
  }
  l.w.resize(out * in);
  for (float& v : l.w) v = 0.05f * g();
  l.w[1 * in + 5] = 1.0f;  // one weight 20x the others
  l.stats = StatsOf(l.x, rows, in);
  return l;
}

// Σ over rows and outputs of ((q - w) · xᵀ)²: how far the layer's outputs move.
inline double OutputError(std::span<const float> q, std::span<const float> w, int64_t out,
                          int64_t in, std::span<const float> x, int64_t rows) {
  double total = 0.0;
  for (int64_t t = 0; t < rows; ++t) {
    for (int64_t o = 0; o < out; ++o) {
      double y = 0.0;
      for (int64_t j = 0; j < in; ++j) y += double{q[o * in + j] - w[o * in + j]} * x[t * in + j];
      total += y * y;
    }
  }
  return total;
}

// Σ over rows and outputs of (xq · wqᵀ - x · wᵀ)²: the error of the layer `l` run with its inputs
// and weights replaced by quantized ones (xq [rows, in], wq [out, in]).
inline double QuantizedLayerError(const OutlierLayer& l, std::span<const float> xq,
                                  std::span<const float> wq) {
  double e = 0.0;
  for (int64_t t = 0; t < l.rows; ++t) {
    for (int64_t o = 0; o < l.out; ++o) {
      double y = 0.0, ref = 0.0;
      for (int64_t j = 0; j < l.in; ++j) {
        y += double{xq[t * l.in + j]} * wq[o * l.in + j];
        ref += double{l.x[t * l.in + j]} * l.w[o * l.in + j];
      }
      e += (y - ref) * (y - ref);
    }
  }
  return e;
}

// Round to nearest on `grid`, row by row.
inline std::vector<float> Rtn(const WeightGrid& grid, std::span<const float> w, int64_t in) {
  std::vector<float> q(w.begin(), w.end());
  for (size_t r = 0; r < q.size(); r += in) grid.QuantizeRow(std::span(q).subspan(r, in));
  return q;
}

}  // namespace kite::testing
