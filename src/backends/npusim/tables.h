// The lookup tables of the npusim numerics (docs/npusim.md §6): activation functions over the
// input code, exp for the softmax, rsqrt for RMSNorm, cos/sin for RoPE. Entries are computed in
// double and rounded half to even, as the spec defines them.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "backends/npusim/fixed_point.h"

namespace kite::npusim {

enum class TableFunction : uint8_t { kSilu, kGeluTanh, kGeluErf };

// §6.1: L[q] = rne(f(s_in (q + o_in)) / s_L), s_L = s_in / 256, one entry per input code.
struct ActivationTable {
  std::vector<int32_t> entries;  // [2^bits]
  double scale = 1.0;            // s_L
};
ActivationTable MakeActivationTable(TableFunction function, const ActEncoding& input);

// §6.2: E[z] = rne(2^16 exp(-z / 4096)), z in [0, 65535]; built once.
std::span<const int32_t> ExpTable();
inline constexpr int32_t kExpTableMax = 65535;

// §6.3: rsqrt(v) ≈ r · 2^-30 · 2^-(p/2) for v >= 1.
struct FixedRsqrt {
  int64_t r = 0;
  int32_t p = 0;  // even
};
FixedRsqrt Rsqrt(int64_t v);

// §6.4: rne(2^30 cos(position · inv_freq)) and the same for sin, the angle in double.
struct FixedCosSin {
  int64_t cos = 0;
  int64_t sin = 0;
};
FixedCosSin RopeCosSin(int64_t position, double inv_freq);

}  // namespace kite::npusim
