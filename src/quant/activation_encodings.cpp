#include "quant/activation_encodings.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>

namespace kite {

namespace {

// The encoding of [lo, hi] widened to hold 0: scale spans the range in 2^bits - 1 steps, and
// the offset puts real 0 on an integer.
QuantEncoding EncodingOfRange(double lo, double hi, int32_t bits) {
  lo = std::min(lo, 0.0);
  hi = std::max(hi, 0.0);
  const double steps = std::ldexp(1.0, bits) - 1;
  // An all-zero activation still needs a positive scale; any does.
  const double span = std::max(hi - lo, double{std::numeric_limits<float>::min()} * steps);
  QuantEncoding e;
  e.bits = bits;
  e.is_signed = false;
  const float scale = static_cast<float>(span / steps);
  e.scales = {scale};
  e.offsets = {static_cast<int32_t>(std::clamp(std::nearbyint(lo / scale), -steps, 0.0))};
  return e;
}

// The value below which `fraction` of the histogram's count lies, interpolated in its bin.
double Quantile(const ActivationStats& stats, double fraction) {
  const double width =
      (double{stats.hist_hi} - stats.hist_lo) / static_cast<double>(stats.hist.size());
  const double target = fraction * static_cast<double>(stats.count);
  double seen = 0;
  for (size_t b = 0; b < stats.hist.size(); ++b) {
    const double in_bin = static_cast<double>(stats.hist[b]);
    if (seen + in_bin >= target && in_bin > 0) {
      return stats.hist_lo + width * (b + (target - seen) / in_bin);
    }
    seen += in_bin;
  }
  return stats.hist_hi;
}

// Expected squared error of quantizing the histogram's values with the range [lo, hi]:
// scale²/12 per value inside, `clip_weight` × the squared distance to the range outside.
double RangeError(const ActivationStats& stats, double lo, double hi, int32_t bits,
                  double clip_weight) {
  const double scale = (hi - lo) / (std::ldexp(1.0, bits) - 1);
  const double noise = scale * scale / 12;
  const double width =
      (double{stats.hist_hi} - stats.hist_lo) / static_cast<double>(stats.hist.size());
  double error = 0;
  for (size_t b = 0; b < stats.hist.size(); ++b) {
    if (stats.hist[b] == 0) continue;
    const double center = stats.hist_lo + width * (b + 0.5);
    const double n = static_cast<double>(stats.hist[b]);
    if (center < lo) {
      error += clip_weight * n * (center - lo) * (center - lo);
    } else if (center > hi) {
      error += clip_weight * n * (center - hi) * (center - hi);
    } else {
      error += n * noise;
    }
  }
  return error;
}

// The range, shrunk from [min, max] toward 0 on each side by a factor of a 20-step grid, that
// minimizes RangeError.
std::pair<double, double> SearchRange(const ActivationStats& stats, int32_t bits,
                                      double clip_weight) {
  const double lo = std::min(double{stats.min}, 0.0), hi = std::max(double{stats.max}, 0.0);
  constexpr int kSteps = 20;
  std::pair<double, double> best = {lo, hi};
  double best_error = std::numeric_limits<double>::infinity();
  for (int i = 0; i < kSteps; ++i) {
    for (int j = 0; j < kSteps; ++j) {
      const double candidate_lo = lo * (kSteps - i) / kSteps;
      const double candidate_hi = hi * (kSteps - j) / kSteps;
      if (candidate_hi - candidate_lo <= 0) continue;
      const double error = RangeError(stats, candidate_lo, candidate_hi, bits, clip_weight);
      if (error < best_error) {
        best_error = error;
        best = {candidate_lo, candidate_hi};
      }
    }
  }
  return best;
}

// AIMET's SQNR encoding analyzer weighs clipping noise by gamma = 3.
constexpr double kSqnrClipWeight = 3.0;

}  // namespace

Result<EncodingMethodSpec> ParseEncodingMethod(std::string_view text) {
  if (text == "minmax") return EncodingMethodSpec{.method = EncodingMethod::kMinMax};
  if (text == "mse") return EncodingMethodSpec{.method = EncodingMethod::kMse};
  if (text == "sqnr") return EncodingMethodSpec{.method = EncodingMethod::kSqnr};
  if (text == "percentile") return EncodingMethodSpec{.method = EncodingMethod::kPercentile};
  if (text.starts_with("percentile:")) {
    const std::string_view number = text.substr(11);
    double value = 0;
    const auto [end, error] = std::from_chars(number.data(), number.data() + number.size(), value);
    if (error == std::errc() && end == number.data() + number.size() && value > 50 &&
        value <= 100) {
      return EncodingMethodSpec{.method = EncodingMethod::kPercentile, .percentile = value};
    }
    return InvalidInput("calibration method '" + std::string(text) +
                        "': the percentile must be a number in (50, 100]");
  }
  return InvalidInput("calibration method '" + std::string(text) +
                      "', expected one of minmax, percentile[:P] (P in (50, 100], default "
                      "99.99), mse, sqnr");
}

std::string EncodingMethodName(const EncodingMethodSpec& spec) {
  switch (spec.method) {
    case EncodingMethod::kMinMax:
      return "minmax";
    case EncodingMethod::kMse:
      return "mse";
    case EncodingMethod::kSqnr:
      return "sqnr";
    case EncodingMethod::kPercentile: {
      char text[48];
      std::snprintf(text, sizeof(text), "percentile:%g", spec.percentile);
      return text;
    }
  }
  return "";
}

Result<QuantEncoding> EncodeActivation(const ActivationStats& stats, int32_t bits,
                                       const EncodingMethodSpec& method, std::string_view name) {
  if (bits != 8 && bits != 16) {
    return InvalidInput("activation '" + std::string(name) + "': " + std::to_string(bits) +
                        "-bit encoding, expected 8 or 16");
  }
  if (stats.count == 0 || stats.hist.empty()) {
    return InvalidInput("activation '" + std::string(name) + "' saw no calibration value");
  }
  switch (method.method) {
    case EncodingMethod::kMinMax:
      return EncodingOfRange(stats.min, stats.max, bits);
    case EncodingMethod::kPercentile: {
      const double p = method.percentile / 100;
      return EncodingOfRange(std::max<double>(stats.min, Quantile(stats, 1 - p)),
                             std::min<double>(stats.max, Quantile(stats, p)), bits);
    }
    case EncodingMethod::kMse: {
      const auto [lo, hi] = SearchRange(stats, bits, 1.0);
      return EncodingOfRange(lo, hi, bits);
    }
    case EncodingMethod::kSqnr: {
      const auto [lo, hi] = SearchRange(stats, bits, kSqnrClipWeight);
      return EncodingOfRange(lo, hi, bits);
    }
  }
  return Internal("unknown encoding method");
}

bool IsKvNode(std::string_view name) {
  return name.starts_with("blk.") && (name.ends_with(".rope_k") || name.ends_with(".attn_v"));
}

Result<ActivationEncodings> ChooseActivationEncodings(const CalibrationStats& stats,
                                                      const ActivationEncodingOptions& options) {
  const int32_t kv_bits = options.kv_bits == 0 ? options.bits : options.kv_bits;
  if (options.bits != 8 && options.bits != 16) {
    return InvalidInput("--act-bits " + std::to_string(options.bits) + ", expected 8 or 16");
  }
  if (kv_bits != 8 && kv_bits != 16) {
    return InvalidInput("--kv-bits " + std::to_string(options.kv_bits) + ", expected 8 or 16");
  }
  if (stats.activations.empty()) {
    return InvalidInput("no activation statistics: calibration ran without activations");
  }
  ActivationEncodings encodings;
  encodings.bits = options.bits;
  encodings.kv_bits = kv_bits;
  encodings.method = EncodingMethodName(options.method);
  for (const auto& [name, activation] : stats.activations) {
    const int32_t bits = IsKvNode(name) ? kv_bits : options.bits;
    encodings.by_node[name] = KITE_TRY(EncodeActivation(activation, bits, options.method, name));
  }
  return encodings;
}

Result<ActivationEncodings> CalibrateActivationEncodings(
    const Model& model, std::span<const std::vector<int32_t>> windows,
    const ActivationEncodingOptions& options, const CalibrationProgress& progress,
    const std::string& backend, int32_t threads) {
  const CalibrationRequest request{
      .activations = true, .head = true, .backend = backend, .threads = threads};
  const CalibrationStats stats =
      KITE_TRY(CollectCalibrationStats(model, windows, request, progress));
  return ChooseActivationEncodings(stats, options);
}

}  // namespace kite
