#include "backends/npusim/tables.h"

#include <bit>
#include <cmath>
#include <numbers>

namespace kite::npusim {

namespace {

int64_t Rne(double x) { return static_cast<int64_t>(std::nearbyint(x)); }

double Apply(TableFunction function, double x) {
  switch (function) {
    case TableFunction::kSilu:
      return x / (1.0 + std::exp(-x));
    case TableFunction::kGeluTanh:
      return 0.5 * x *
             (1.0 + std::tanh(std::sqrt(2.0 / std::numbers::pi) * (x + 0.044715 * x * x * x)));
    case TableFunction::kGeluErf:
      return 0.5 * x * (1.0 + std::erf(x / std::numbers::sqrt2));
  }
  return x;
}

// §6.3's T[i] = rne(2^30 / sqrt((2^14 + i) / 2^14)), i in [0, 3 · 2^14].
std::vector<int64_t> MakeRsqrtTable() {
  std::vector<int64_t> table(3 * (1 << 14) + 1);
  for (size_t i = 0; i < table.size(); ++i) {
    table[i] = Rne(std::ldexp(1.0, 30) / std::sqrt((16384.0 + static_cast<double>(i)) / 16384.0));
  }
  return table;
}

}  // namespace

ActivationTable MakeActivationTable(TableFunction function, const ActEncoding& input) {
  ActivationTable table{.entries = std::vector<int32_t>(size_t{1} << input.bits),
                        .scale = input.scale / 256.0};
  for (size_t q = 0; q < table.entries.size(); ++q) {
    const double x = input.scale * static_cast<double>(static_cast<int64_t>(q) + input.offset);
    table.entries[q] = static_cast<int32_t>(Rne(Apply(function, x) / table.scale));
  }
  return table;
}

std::span<const int32_t> ExpTable() {
  static const std::vector<int32_t> table = [] {
    std::vector<int32_t> e(kExpTableMax + 1);
    for (int32_t z = 0; z <= kExpTableMax; ++z) {
      e[z] = static_cast<int32_t>(Rne(65536.0 * std::exp(-z / 4096.0)));
    }
    return e;
  }();
  return table;
}

FixedRsqrt Rsqrt(int64_t v) {
  static const std::vector<int64_t> table = MakeRsqrtTable();
  const int32_t p = (std::bit_width(static_cast<uint64_t>(v)) - 1) & ~1;
  const int64_t j = static_cast<int64_t>(RoundShift(Int128{v} << 14, p));
  return {table[j - (1 << 14)], p};
}

FixedCosSin RopeCosSin(int64_t position, double inv_freq) {
  const double angle = static_cast<double>(position) * inv_freq;
  return {Rne(std::ldexp(std::cos(angle), 30)), Rne(std::ldexp(std::sin(angle), 30))};
}

}  // namespace kite::npusim
