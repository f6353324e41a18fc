// The RoPE precision failure of fp16 sin/cos at large positions, and that npusim's tables
// (docs/npusim.md §6.4) avoid it. The vendor path's RoPE forms the angle position · ω in fp16
// (or reads an fp16 table of it): fp16 keeps 11 significant bits, so ω carries up to 2^-12 of
// relative error and the angle near 30,000 is rounded to a multiple of 16: at position 30,000
// the angles are off by radians.
#include <gtest/gtest.h>

#include <cmath>

#include "backends/npusim/kernels.h"
#include "base/half.h"
#include "graph/ops.h"

namespace kite::npusim {
namespace {

float ToF16(float x) { return F16ToF32(F32ToF16(x)); }

// The largest |cos/sin error| over the rotary pairs at `position`, for fp16 angles and for
// npusim's Q30 tables, against the angle in double.
struct Errors {
  double fp16 = 0.0;
  double table = 0.0;
};
Errors CosSinErrors(int64_t position, const RopeAttrs& attrs) {
  Errors e;
  for (int64_t i = 0; i < attrs.rotary_dim / 2; ++i) {
    const double inv_freq = RopeInverseFrequency(attrs, i);
    const double exact = static_cast<double>(position) * inv_freq;
    // fp16: position and ω in fp16, their product rounded to fp16, then cos/sin of that.
    const float angle16 =
        ToF16(ToF16(static_cast<float>(position)) * ToF16(static_cast<float>(inv_freq)));
    e.fp16 = std::max({e.fp16, std::abs(std::cos(angle16) - std::cos(exact)),
                       std::abs(std::sin(angle16) - std::sin(exact))});
    const FixedCosSin t = RopeCosSin(position, inv_freq);
    e.table = std::max({e.table, std::abs(std::ldexp(static_cast<double>(t.cos), -30) - std::cos(exact)),
                        std::abs(std::ldexp(static_cast<double>(t.sin), -30) - std::sin(exact))});
  }
  return e;
}

TEST(NpusimRope, Fp16AnglesFailAtLargePositionsTheTablesDoNot) {
  const RopeAttrs attrs{.theta = 10000.0f, .rotary_dim = 64};
  const Errors small = CosSinErrors(5, attrs);
  const Errors large = CosSinErrors(30000, attrs);
  // At position 5 fp16 is merely coarse; at 30,000 its cos/sin are wrong in the first digit.
  EXPECT_LT(small.fp16, 0.01);
  EXPECT_GT(large.fp16, 0.5);
  // §6.4's bound: 2^-31 from the entry's rounding, plus the double angle's error.
  EXPECT_LT(small.table, 1e-9);
  EXPECT_LT(large.table, 1e-9);
}

TEST(NpusimRope, KernelAtPosition30000MatchesTheExactRotation) {
  // One head of 64 dims on a 16-bit grid of [-4, 4]: the kernel's output codes against the
  // rotation computed in double and rounded to the same grid.
  const RopeAttrs attrs{.theta = 10000.0f, .rotary_dim = 64};
  const ActEncoding enc = MakeActEncoding(8.0f / 65535.0f, -32768, 16);
  const std::vector<double> inv_freq = RopeInverseFrequencies(attrs);
  auto plan = PlanRope(inv_freq, /*neox=*/true, 64, 1.0f, enc, enc);
  ASSERT_TRUE(plan);
  std::vector<int32_t> x(64), y(64);
  for (int32_t d = 0; d < 64; ++d) x[d] = 32768 + (d * 7919) % 20000 - 10000;
  const std::vector<int32_t> positions = {30000};
  Rope(*plan, x, positions, 1, 64, y);
  int64_t worst_table = 0, worst_fp16 = 0;
  for (int64_t i = 0; i < 32; ++i) {
    const double x0 = enc.scale * (x[i] + enc.offset), x1 = enc.scale * (x[i + 32] + enc.offset);
    const double angle = 30000.0 * inv_freq[i];
    const double y0 = x0 * std::cos(angle) - x1 * std::sin(angle);
    const float angle16 = ToF16(ToF16(30000.0f) * ToF16(static_cast<float>(inv_freq[i])));
    const double f0 = x0 * std::cos(angle16) - x1 * std::sin(angle16);
    auto code = [&](double v) { return std::llround(v / enc.scale) - enc.offset; };
    worst_table = std::max<int64_t>(worst_table, std::abs(y[i] - code(y0)));
    worst_fp16 = std::max<int64_t>(worst_fp16, std::abs(code(f0) - code(y0)));
  }
  EXPECT_LE(worst_table, 1);      // one output LSB: the requantization's rounding
  EXPECT_GT(worst_fp16, 1000);    // thousands of LSBs: the fp16 angle is off by radians
}

}  // namespace
}  // namespace kite::npusim
