#include "backends/npusim/fixed_point.h"

#include <cmath>
#include <string>

namespace kite::npusim {

Result<Multiplier> MakeMultiplier(double real, std::string_view what) {
  if (real == 0.0) return Multiplier{};
  if (!std::isfinite(real)) {
    return InvalidInput(std::string(what) + ": the scale ratio " + std::to_string(real) +
                        " is not finite");
  }
  int exponent = 0;
  const double fraction = std::frexp(real, &exponent);  // |fraction| in [0.5, 1)
  int64_t m = static_cast<int64_t>(std::nearbyint(std::ldexp(fraction, 31)));
  if (m == (int64_t{1} << 31) || m == -(int64_t{1} << 31)) {
    m /= 2;
    ++exponent;
  }
  const int32_t r = 31 - exponent;
  if (r < 0 || r > 120) {
    return InvalidInput(std::string(what) + ": the scale ratio " + std::to_string(real) +
                        " is outside [2^-89, 2^31) (docs/npusim.md §3.1)");
  }
  return Multiplier{m, r};
}

ActEncoding MakeActEncoding(float scale, int32_t offset, int32_t bits) {
  return {.scale = scale,
          .scale_f32 = scale,
          .offset = offset,
          .bits = bits,
          .q_min = 0,
          .q_max = static_cast<int32_t>((int64_t{1} << bits) - 1)};
}

Result<ActEncoding> ActivationEncoding(const QuantEncoding& encoding, std::string_view what) {
  if (encoding.granularity != EncodingGranularity::kPerTensor || encoding.is_signed ||
      (encoding.bits != 8 && encoding.bits != 16)) {
    return Unsupported(std::string(what) + " is " + EncodingString(encoding) +
                       "; npusim activations are u8/u16 per tensor (docs/npusim.md §2.1)");
  }
  return MakeActEncoding(encoding.scales[0], encoding.offsets.empty() ? 0 : encoding.offsets[0],
                         encoding.bits);
}

}  // namespace kite::npusim
