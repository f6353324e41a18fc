#include <cmath>
#include <numbers>
#include <vector>

#include "graph/op_rules.h"

namespace kite {

namespace {

Status CheckAttrs(const RopeAttrs& a, int64_t head_dim) {
  if (a.rotary_dim <= 0 || a.rotary_dim % 2 != 0 || a.rotary_dim > head_dim) {
    return InvalidInput("rotary_dim " + std::to_string(a.rotary_dim) + " must be even and in 2.." +
                        std::to_string(head_dim) + " (head dim)");
  }
  if (!(a.theta > 0.0f) || !std::isfinite(a.theta)) {
    return InvalidInput("theta " + std::to_string(a.theta) + " must be finite and > 0");
  }
  if (a.scaling != RopeScaling::kNone && (!(a.factor > 0.0f) || !std::isfinite(a.factor))) {
    return InvalidInput("scaling factor " + std::to_string(a.factor) + " must be finite and > 0");
  }
  if (a.scaling == RopeScaling::kLlama3 &&
      (!(a.low_freq_factor > 0.0f) || !(a.high_freq_factor > a.low_freq_factor) ||
       !std::isfinite(a.high_freq_factor) || a.original_max_position <= 0)) {
    return InvalidInput("llama3 scaling needs 0 < low_freq_factor (" +
                        std::to_string(a.low_freq_factor) + ") < high_freq_factor (" +
                        std::to_string(a.high_freq_factor) + ") and original_max_position (" +
                        std::to_string(a.original_max_position) + ") > 0");
  }
  if (!(a.attention_factor > 0.0f) || !std::isfinite(a.attention_factor)) {
    return InvalidInput("attention_factor " + std::to_string(a.attention_factor) +
                        " must be finite and > 0");
  }
  if (a.scaling == RopeScaling::kDivisors) {
    if (static_cast<int64_t>(a.divisors.size()) != a.rotary_dim / 2) {
      return InvalidInput(std::to_string(a.divisors.size()) +
                          " frequency divisors, expected one per rotary pair (" +
                          std::to_string(a.rotary_dim / 2) + ")");
    }
    for (size_t i = 0; i < a.divisors.size(); ++i) {
      if (!(a.divisors[i] > 0.0f) || !std::isfinite(a.divisors[i])) {
        return InvalidInput("frequency divisor " + std::to_string(i) + " is " +
                            std::to_string(a.divisors[i]) + ", expected finite and > 0");
      }
    }
  }
  return Ok();
}

}  // namespace

Result<OutputSpec> InferOutput(const RopeAttrs& attrs, RuleInputs in) {
  KITE_RETURN_IF_ERROR(rules::ExpectInputs(in, 2, "x, positions"));
  const Value& x = *in[0];
  const Value& positions = *in[1];
  KITE_RETURN_IF_ERROR(rules::ExpectActivation("x", x));
  KITE_RETURN_IF_ERROR(rules::ExpectRank("x [T, heads, head_dim]", x, 3));
  KITE_RETURN_IF_ERROR(rules::ExpectDType("positions", positions, DType::kI32));
  if (positions.shape.size() != 1 || positions.shape[0] != x.shape[0]) {
    return InvalidInput(rules::Describe("x", x) + " and " +
                        rules::Describe("positions", positions) + ": expected positions [" +
                        std::to_string(x.shape[0]) + "]");
  }
  KITE_RETURN_IF_ERROR(CheckAttrs(attrs, x.shape[2]));
  return OutputSpec::Of(DType::kF32, x.shape);
}

// inv_freq[i] = theta^(-2i / rotary_dim), then the scaling's adjustment. Llama 3 keeps high
// frequencies (wavelength below original_max / high_freq_factor), divides low ones (wavelength
// above original_max / low_freq_factor) by the factor, and blends in between.
double RopeInverseFrequency(const RopeAttrs& a, int64_t i) {
  const double inv_freq = std::pow(static_cast<double>(a.theta), -2.0 * i / a.rotary_dim);
  switch (a.scaling) {
    case RopeScaling::kNone:
      return inv_freq;
    case RopeScaling::kLinear:
      return inv_freq / a.factor;
    case RopeScaling::kLlama3: {
      const double wavelength = 2.0 * std::numbers::pi / inv_freq;
      const double high_freq_wavelength = a.original_max_position / a.high_freq_factor;
      const double low_freq_wavelength = a.original_max_position / a.low_freq_factor;
      if (wavelength < high_freq_wavelength) return inv_freq;
      if (wavelength > low_freq_wavelength) return inv_freq / a.factor;
      const double smooth = (a.original_max_position / wavelength - a.low_freq_factor) /
                            (a.high_freq_factor - a.low_freq_factor);
      return (1.0 - smooth) * inv_freq / a.factor + smooth * inv_freq;
    }
    case RopeScaling::kDivisors:
      return inv_freq / a.divisors[i];
  }
  return inv_freq;
}

std::vector<double> RopeInverseFrequencies(const RopeAttrs& attrs) {
  std::vector<double> inv_freq(attrs.rotary_dim / 2);
  for (size_t i = 0; i < inv_freq.size(); ++i) inv_freq[i] = RopeInverseFrequency(attrs, i);
  return inv_freq;
}

}  // namespace kite
