// npusim's FP16 path (docs/npusim.md §11, v73 and later): each op is the f32 op on f16 inputs,
// rounded to f16 (ties to even) at its output. Values are f16 numbers held in f32 (what the
// graph's values hold); every kernel computes in f64 in a stated order, sums of products of f16
// values and integer weight codes exactly in 128-bit integers, then rounds f64 -> f32 -> f16,
// so tools/npusim_reference.py (Python floats, the same libm) gives the same bits.
// The op tests (npusim_ops_test.cpp) call these directly with the reference's inputs.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "backends/npusim/kernels.h"
#include "base/thread_pool.h"

namespace kite::npusim {

// x as the f16 it rounds to (ties to even), back in f32: the convert at an fp16 op's input and
// output.
float RoundToF16(float x);
// The §11 output rounding of an f64 result: f64 -> f32 -> f16, each ties to even.
float F16Result(double y);

// ------------------------------------- matmul: y[t, n] = Σ_k x[t, k] · w[n, k] + bias[n]
struct Fp16MatMulPlan {
  int64_t n = 0, k = 0;
  std::vector<int16_t> codes = {};  // [N, K] weight codes, LPBQ block multipliers folded in
  std::vector<double> scales = {};  // [N] s_w[n] (LPBQ: the channel scale)
  std::vector<double> bias = {};    // [N] or empty
};
// x [T, K] f16 values -> y [T, N]; rows of N split over `pool` (null: the caller's thread).
void Fp16MatMul(const Fp16MatMulPlan& plan, std::span<const float> x, int64_t tokens,
                std::span<float> y, ThreadPool* pool);

// ------------------------------------- add, mul (NumPy broadcasting, kernels.h's Broadcast)
void Fp16AddMul(bool mul, const Broadcast& shape, std::span<const float> a,
                std::span<const float> b, std::span<float> y);

// ------------------------------------- silu, gelu, swiglu, geglu
enum class Fp16Function { kSilu, kGeluTanh, kGeluErf };
double Fp16Apply(Fp16Function f, double x);  // the activation in f64
void Fp16Activation(Fp16Function f, std::span<const float> x, std::span<float> y);
// f(gate) · up: swiglu (silu), geglu (gelu tanh).
void Fp16Gated(Fp16Function f, std::span<const float> gate, std::span<const float> up,
               std::span<float> y);

// ------------------------------------- RMSNorm over rows of `weight.size()`
void Fp16RmsNorm(std::span<const float> weight, float eps, std::span<const float> x,
                 std::span<float> y);

// ------------------------------------- RoPE: x [T, H, D] -> y; inv_freq [rotary_dim / 2]
// The numbers of graph/passes/decompose_rope.h's form on the FP16 path (sin/cos tables computed
// in f64, gathered as f16, two products and a sum each rounded to f16), fused: the angle never
// passes through fp16.
void Fp16Rope(std::span<const double> inv_freq, bool neox, float attention_factor,
              std::span<const float> x, std::span<const int32_t> positions, int64_t heads,
              int64_t dim, std::span<float> y);

// ------------------------------------- attention: one query row against cached heads
// Cached k or v head of `position` ([D] f16 bits when `f16` is set, else f32).
struct Fp16Cache {
  bool f16 = true;
  std::function<const void*(int64_t position)> key, value;
};
// query [D] at `position` sees positions first..position (first = position - window + 1 when
// window > 0); `weights` is scratch of position + 1 doubles.
void Fp16AttendRow(float scale, int32_t window, const Fp16Cache& cache, int64_t position,
                   std::span<const float> query, std::span<double> weights,
                   std::span<float> out);

}  // namespace kite::npusim
