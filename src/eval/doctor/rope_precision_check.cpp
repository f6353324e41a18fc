// rope.precision: at the longest position the angle position * inv_freq is large (131,071 rad
// for the fastest pair of a 128k context), and f32 keeps only 24 bits of it: rounding the
// position, the inverse frequency and their product leaves errors of ulp/2 = 0.008 rad there,
// 0.06 rad at 1M positions. Kite's ref and cpu backends compute angles in double, so Kite itself
// is exact; the figure says what a runtime that computes them in f32 (many kernels, NPU tables)
// gets wrong, which garbles long contexts once it nears the spacing of the slow pairs.
#include <algorithm>
#include <cmath>
#include <string>

#include "eval/doctor/checks.h"
#include "eval/doctor/format.h"

namespace kite::doctor {

namespace {

constexpr char kId[] = "rope.precision";
// f32 angle errors past this (radians) are worth knowing when the model leaves Kite.
constexpr double kWarnAngleError = 0.05;

}  // namespace

double F32AngleError(const RopeAttrs& rope, int64_t position) {
  double worst = 0.0;
  for (int64_t i = 0; i < rope.rotary_dim / 2; ++i) {
    const double inv_freq = RopeInverseFrequency(rope, i);
    const double exact = static_cast<double>(position) * inv_freq;
    const float f32 = static_cast<float>(position) * static_cast<float>(inv_freq);
    worst = std::max(worst, std::abs(static_cast<double>(f32) - exact));
  }
  return worst;
}

CheckResult CheckRopePrecision(const Subject& subject) {
  if (!subject.model) return Skipped(kId, "the model did not load (file.compat)");
  const ModelConfig& config = subject.model->config();
  const int64_t last = std::max(subject.ctx, config.context_length) - 1;
  const double error = F32AngleError(config.rope, last);
  CheckResult result;
  const std::string figure = "at position " + std::to_string(last) + " f32 angles would be off by up to " +
                             Significant(error) + " rad; Kite computes them in double (exact)";
  if (error > kWarnAngleError) {
    result = Finding(kId, CheckStatus::kWarn, figure,
                     "nothing to do in Kite; a runtime that computes RoPE angles in f32 will drift at this "
                     "context: keep its context shorter or have it compute angles in double");
  } else {
    result = Finding(kId, CheckStatus::kPass, figure);
  }
  result.data = {{"position", last}, {"f32_angle_error", error}};
  return result;
}

}  // namespace kite::doctor
