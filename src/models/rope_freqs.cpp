#include "models/rope_freqs.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>
#include <vector>

namespace kite {

namespace {

double InverseFrequency(const RopeAttrs& rope, int32_t i) {
  return std::pow(static_cast<double>(rope.theta), -2.0 * i / rope.rotary_dim);
}

// Divisors this close to 1 or to the factor count as kept or fully slowed.
constexpr double kClassifyTolerance = 1e-5;
// How close the recovered parameters must reproduce each stored divisor (relative). The file's
// divisors were computed in float32, so they carry ~1e-7 of their own error.
constexpr double kMatchTolerance = 1e-4;

}  // namespace

double RopeDivisor(const RopeAttrs& rope, int32_t i) {
  const double inv_freq = InverseFrequency(rope, i);
  switch (rope.scaling) {
    case RopeScaling::kNone:
      return 1.0;
    case RopeScaling::kLinear:
      return rope.factor;
    case RopeScaling::kLlama3: {
      const double wavelength = 2.0 * std::numbers::pi / inv_freq;
      const double original = rope.original_max_position;
      if (wavelength < original / rope.high_freq_factor) return 1.0;
      if (wavelength > original / rope.low_freq_factor) return rope.factor;
      const double smooth = (original / wavelength - rope.low_freq_factor) /
                            (rope.high_freq_factor - rope.low_freq_factor);
      return 1.0 / ((1.0 - smooth) / rope.factor + smooth);
    }
  }
  return 1.0;
}

Status RopeScalingFromDivisors(std::span<const float> divisors, const std::string& what,
                               RopeAttrs* rope) {
  const int32_t pairs = rope->rotary_dim / 2;
  if (static_cast<int64_t>(divisors.size()) != pairs) {
    return InvalidInput(what + " has " + std::to_string(divisors.size()) +
                        " entries, expected one per rotary pair (" + std::to_string(pairs) + ")");
  }
  double factor = 0.0;
  for (size_t i = 0; i < divisors.size(); ++i) {
    if (!std::isfinite(divisors[i]) || divisors[i] < 1.0f - kClassifyTolerance) {
      return InvalidInput(what + "[" + std::to_string(i) + "] is " + std::to_string(divisors[i]) +
                          ", expected a finite divisor >= 1");
    }
    factor = std::max(factor, static_cast<double>(divisors[i]));
  }
  rope->scaling = RopeScaling::kNone;
  rope->factor = 1.0f;
  if (factor <= 1.0 + kClassifyTolerance) return Ok();

  // Llama 3 blends with smooth = (original / wavelength - low) / (high - low) = A·u - B in
  // u = 1 / wavelength; the divisor is 1 / ((1 - smooth) / factor + smooth), so each divisor
  // gives its pair's smooth, clamped to [0, 1] outside the blend.
  struct Point {
    double u;
    double smooth;
  };
  std::vector<Point> blended;
  double min_kept_u = INFINITY;   // kept pairs need A·u - B >= 1
  double max_slow_u = -INFINITY;  // slowed pairs need A·u - B <= 0
  for (int32_t i = 0; i < pairs; ++i) {
    const double u = InverseFrequency(*rope, i) / (2.0 * std::numbers::pi);
    const double smooth = (1.0 / divisors[i] - 1.0 / factor) / (1.0 - 1.0 / factor);
    if (smooth >= 1.0 - kClassifyTolerance) {
      min_kept_u = std::min(min_kept_u, u);
    } else if (smooth <= kClassifyTolerance) {
      max_slow_u = std::max(max_slow_u, u);
    } else {
      blended.push_back({u, smooth});
    }
  }
  rope->factor = static_cast<float>(factor);
  if (blended.empty() && std::isinf(min_kept_u)) {  // every pair slowed alike
    rope->scaling = RopeScaling::kLinear;
    return Ok();
  }

  double slope = 0.0;   // A
  double offset = 0.0;  // B
  if (blended.size() >= 2) {
    const Point& a = blended.front();
    const Point& b = blended.back();
    slope = (a.smooth - b.smooth) / (a.u - b.u);
    offset = slope * a.u - a.smooth;
  } else if (blended.size() == 1) {
    // Any slope at least these bounds passes through the point and keeps the other pairs on
    // their side; the last bound keeps B (the low frequency factor) positive.
    const Point& p = blended.front();
    slope = 2.0 * p.smooth / p.u;
    if (!std::isinf(min_kept_u)) slope = std::max(slope, (1.0 - p.smooth) / (min_kept_u - p.u));
    if (!std::isinf(max_slow_u)) slope = std::max(slope, p.smooth / (p.u - max_slow_u));
    offset = slope * p.u - p.smooth;
  } else {  // a step from slowed to kept: the line through both edges
    slope = 1.0 / (min_kept_u - max_slow_u);
    offset = slope * max_slow_u;
  }
  if (!(slope > 0.0) || !(offset > 0.0) || !std::isfinite(slope) || !std::isfinite(offset)) {
    return Unsupported(what + ": the per-pair frequency divisors do not follow Llama 3 scaling");
  }
  // original = A·k, low = B·k, high = (B + 1)·k for any k > 0; pick k so original is whole.
  const double original = std::max(1.0, std::round(slope));
  const double k = original / slope;
  rope->scaling = RopeScaling::kLlama3;
  rope->original_max_position = static_cast<int32_t>(std::min(original, 2e9));
  rope->low_freq_factor = static_cast<float>(offset * k);
  rope->high_freq_factor = static_cast<float>((offset + 1.0) * k);

  for (int32_t i = 0; i < pairs; ++i) {
    const double fitted = RopeDivisor(*rope, i);
    if (std::abs(fitted - divisors[i]) > kMatchTolerance * divisors[i]) {
      return Unsupported(what +
                         ": the per-pair frequency divisors do not follow Llama 3 scaling "
                         "(pair " +
                         std::to_string(i) + " is " + std::to_string(divisors[i]) +
                         "; the closest Llama 3 parameters give " + std::to_string(fitted) + ")");
    }
  }
  return Ok();
}

}  // namespace kite
