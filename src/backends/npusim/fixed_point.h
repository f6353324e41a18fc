// Integer arithmetic of the npusim numerics (docs/npusim.md §3): fixed-point multipliers, the
// rounding right shift, requantization with saturation, and the activation encodings the
// kernels read. Products that may pass 64 bits are formed in 128 bits, as the spec states them
// exact.
#pragma once

#include <algorithm>
#include <cstdint>

#include "base/status.h"
#include "graph/encoding.h"

namespace kite::npusim {

using Int128 = __int128;

// docs/npusim.md §3.1: M ≈ m · 2^-r, |m| in [2^30, 2^31) (m = r = 0 for M = 0).
struct Multiplier {
  int64_t m = 0;
  int32_t r = 0;
};
// InvalidInput naming `what` when M is not finite or r falls outside [0, 120].
Result<Multiplier> MakeMultiplier(double real, std::string_view what);

// §3.2: floor((a + 2^(r-1)) / 2^r), round half up; a for r = 0.
inline Int128 RoundShift(Int128 a, int32_t r) {
  return r == 0 ? a : (a + (Int128{1} << (r - 1))) >> r;
}

// §3.4: floor((2a + b) / (2b)) for b > 0.
inline Int128 DivRound(Int128 a, Int128 b) {
  const Int128 n = 2 * a + b;
  const Int128 d = 2 * b;
  Int128 q = n / d;
  if ((n % d != 0) && (n < 0)) --q;  // C++ truncates toward 0; the spec floors
  return q;
}

// A per-tensor activation encoding as the kernels use it (§2.1).
struct ActEncoding {
  double scale = 1.0;
  float scale_f32 = 1.0f;  // the f32 the transport (§2.4) multiplies and divides by
  int32_t offset = 0;
  int32_t bits = 8;
  int32_t q_min = 0;
  int32_t q_max = 255;

  int32_t Clamp(Int128 q) const {
    return static_cast<int32_t>(std::clamp<Int128>(q, q_min, q_max));
  }
};

// The encoding of a quantize/dequantize pair's activation: unsigned 8 or 16 bits, per tensor;
// else Unsupported naming `what`.
Result<ActEncoding> ActivationEncoding(const QuantEncoding& encoding, std::string_view what);
// A u8/u16 encoding from its parts (the op tests').
ActEncoding MakeActEncoding(float scale, int32_t offset, int32_t bits);

// §3.3: clamp(RoundShift(acc · m, r) − offset_y) to y's range.
inline int32_t Requantize(Int128 acc, const Multiplier& mult, const ActEncoding& y) {
  return y.Clamp(RoundShift(acc * mult.m, mult.r) - y.offset);
}

}  // namespace kite::npusim
