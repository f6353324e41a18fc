// The FP16 path's kernels, docs/npusim.md §11. Built with -ffp-contract=off (CMakeLists.txt):
// a fused multiply-add would round once where the spec (and numpy) round twice.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numbers>

#include "backends/npusim/broadcast.h"
#include "backends/npusim/fp16_kernels.h"
#include "base/half.h"

namespace kite::npusim {

namespace {

// An f16 value times 2^24 is an integer (2^-24 is f16's smallest step) below 2^40 in magnitude:
// the exact form §11's sums use.
int64_t Fixed24(float x) { return static_cast<int64_t>(std::ldexp(static_cast<double>(x), 24)); }

double CachedElement(const void* head, bool f16, int64_t d) {
  if (f16) {
    uint16_t bits;
    std::memcpy(&bits, static_cast<const std::byte*>(head) + 2 * d, 2);
    return F16ToF32(bits);
  }
  return static_cast<const float*>(head)[d];
}

}  // namespace

float RoundToF16(float x) { return F16ToF32(F32ToF16(x)); }

float F16Result(double y) { return RoundToF16(static_cast<float>(y)); }

void Fp16MatMul(const Fp16MatMulPlan& plan, std::span<const float> x, int64_t tokens,
                std::span<float> y, ThreadPool* pool) {
  auto rows = [&](int64_t begin, int64_t end) {
    std::vector<int64_t> fixed(static_cast<size_t>(plan.k));
    for (int64_t t = 0; t < tokens; ++t) {
      for (int64_t k = 0; k < plan.k; ++k) fixed[k] = Fixed24(x[t * plan.k + k]);
      for (int64_t n = begin; n < end; ++n) {
        const int16_t* w = plan.codes.data() + n * plan.k;
        Int128 acc = 0;
        for (int64_t k = 0; k < plan.k; ++k) acc += Int128{fixed[k]} * w[k];
        double v = std::ldexp(static_cast<double>(acc), -24) * plan.scales[n];
        if (!plan.bias.empty()) v += plan.bias[n];
        y[t * plan.n + n] = F16Result(v);
      }
    }
  };
  if (pool) {
    pool->ParallelForChunks(plan.n, 64, rows);
  } else {
    rows(0, plan.n);
  }
}

void Fp16AddMul(bool mul, const Broadcast& shape, std::span<const float> a,
                std::span<const float> b, std::span<float> y) {
  ForEachBroadcast(shape, [&](int64_t i, int64_t ia, int64_t ib) {
    const double l = a[ia], r = b[ib];
    y[i] = F16Result(mul ? l * r : l + r);
  });
}

double Fp16Apply(Fp16Function f, double x) {
  switch (f) {
    case Fp16Function::kSilu:
      return x / (1.0 + std::exp(-x));
    case Fp16Function::kGeluTanh: {
      const double c = std::sqrt(2.0 / std::numbers::pi);
      return 0.5 * x * (1.0 + std::tanh(c * (x + 0.044715 * x * x * x)));
    }
    case Fp16Function::kGeluErf:
      return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
  }
  return x;
}

void Fp16Activation(Fp16Function f, std::span<const float> x, std::span<float> y) {
  for (size_t i = 0; i < x.size(); ++i) y[i] = F16Result(Fp16Apply(f, x[i]));
}

void Fp16Gated(Fp16Function f, std::span<const float> gate, std::span<const float> up,
               std::span<float> y) {
  for (size_t i = 0; i < gate.size(); ++i) {
    y[i] = F16Result(Fp16Apply(f, gate[i]) * static_cast<double>(up[i]));
  }
}

// Σ x² exactly (squares of Fixed24, units of 2^-48), then mean, eps, 1/sqrt and the products in
// f64, in this order.
void Fp16RmsNorm(std::span<const float> weight, float eps, std::span<const float> x,
                 std::span<float> y) {
  const size_t dim = weight.size();
  for (size_t row = 0; row * dim < x.size(); ++row) {
    const float* in = x.data() + row * dim;
    Int128 squares = 0;
    for (size_t d = 0; d < dim; ++d) squares += Int128{Fixed24(in[d])} * Fixed24(in[d]);
    const double mean = std::ldexp(static_cast<double>(squares), -48) / static_cast<double>(dim);
    const double r = 1.0 / std::sqrt(mean + static_cast<double>(eps));
    for (size_t d = 0; d < dim; ++d) {
      y[row * dim + d] = F16Result(static_cast<double>(in[d]) * r * static_cast<double>(weight[d]));
    }
  }
}

void Fp16Rope(std::span<const double> inv_freq, bool neox, float attention_factor,
              std::span<const float> x, std::span<const int32_t> positions, int64_t heads,
              int64_t dim, std::span<float> y) {
  const int64_t half = static_cast<int64_t>(inv_freq.size());
  const double factor = attention_factor;
  for (size_t t = 0; t < positions.size(); ++t) {
    for (int64_t i = 0; i < half; ++i) {
      const double angle = static_cast<double>(positions[t]) * inv_freq[i];
      // decompose_rope's table entries (f64, stored f32), read as f16 by the gather.
      const double c = F16Result(std::cos(angle) * factor);
      const double s = F16Result(std::sin(angle) * factor);
      const int64_t i0 = neox ? i : 2 * i, i1 = neox ? i + half : 2 * i + 1;
      for (int64_t h = 0; h < heads; ++h) {
        const int64_t base = (static_cast<int64_t>(t) * heads + h) * dim;
        const double x0 = x[base + i0], x1 = x[base + i1];
        // x ⊙ cos + rotate(x) ⊙ sin, each product and the sum rounded to f16.
        y[base + i0] = F16Result(static_cast<double>(F16Result(x0 * c)) - F16Result(x1 * s));
        y[base + i1] = F16Result(static_cast<double>(F16Result(x1 * c)) + F16Result(x0 * s));
      }
    }
    for (int64_t h = 0; h < heads; ++h) {
      const int64_t base = (static_cast<int64_t>(t) * heads + h) * dim;
      for (int64_t d = 2 * half; d < dim; ++d) y[base + d] = x[base + d];
    }
  }
}

// Scores exactly (Σ q·k in units of 2^-48) times scale, softmax with the max subtracted, the
// weights' sum and Σ_j e_j · v_j in f64 in position order, one division.
void Fp16AttendRow(float scale, int32_t window, const Fp16Cache& cache, int64_t position,
                   std::span<const float> query, std::span<double> weights,
                   std::span<float> out) {
  const int64_t dim = static_cast<int64_t>(query.size());
  const int64_t first = window > 0 && position >= window ? position - window + 1 : 0;
  double top = -INFINITY;
  for (int64_t j = first; j <= position; ++j) {
    const void* key = cache.key(j);
    Int128 dot = 0;
    for (int64_t d = 0; d < dim; ++d) {
      dot += Int128{Fixed24(query[d])} *
             Fixed24(static_cast<float>(CachedElement(key, cache.f16, d)));
    }
    weights[j] = std::ldexp(static_cast<double>(dot), -48) * static_cast<double>(scale);
    top = std::max(top, weights[j]);
  }
  double sum = 0.0;
  for (int64_t j = first; j <= position; ++j) {
    weights[j] = std::exp(weights[j] - top);
    sum += weights[j];
  }
  std::vector<double> acc(static_cast<size_t>(dim), 0.0);
  for (int64_t j = first; j <= position; ++j) {
    const void* value = cache.value(j);
    for (int64_t d = 0; d < dim; ++d) acc[d] += weights[j] * CachedElement(value, cache.f16, d);
  }
  for (int64_t d = 0; d < dim; ++d) out[d] = F16Result(acc[d] / sum);
}

}  // namespace kite::npusim
