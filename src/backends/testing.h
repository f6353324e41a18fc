// Test helpers for backend tests (header-only: included by *_test.cpp files only).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "tensor/dtype_row.h"

namespace kite::testing {

// n values drawn uniformly from [lo, hi), the same for the same seed.
inline std::vector<float> Random(int64_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> values(n);
  for (float& v : values) v = dist(rng);
  return values;
}

// Expects |got - want| <= atol + rtol·|want| element-wise; reports the first few misses and the
// largest error.
inline void ExpectClose(std::span<const float> got, std::span<const double> want, double rtol,
                        double atol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int misses = 0;
  double worst = 0.0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double error = std::abs(static_cast<double>(got[i]) - want[i]);
    const double allowed = atol + rtol * std::abs(want[i]);
    worst = std::max(worst, error / allowed);
    if (!(error <= allowed) && ++misses <= 5) {
      ADD_FAILURE() << what << ": element " << i << " is " << got[i] << ", expected " << want[i]
                    << " (error " << error << " > " << allowed << ")";
    }
  }
  EXPECT_EQ(misses, 0) << what << ": " << misses << " of " << got.size()
                       << " elements out of tolerance; worst error/allowed " << worst;
}

inline void ExpectClose(std::span<const float> got, std::span<const float> want, double rtol,
                        double atol, const std::string& what) {
  std::vector<double> wide(want.begin(), want.end());
  ExpectClose(got, wide, rtol, atol, what);
}

// |d·sc·(q - zero)| + |dmin·mn| of each weight of a k-quant matrix (levels[q] for q - zero), by
// the tensor layer's unpacker; empty for other types. The cpu backend rounds each of its
// parts to f16 when it repacks k-quants (backends/cpu/kquant_repack.h): a weight moves by at most
// 2^-11 of this.
inline std::vector<float> KQuantScaleParts(DType dtype, const std::vector<uint8_t>& w,
                                           int64_t elements) {
  const DTypeRow& row = *FindRow(dtype);
  if (row.codes.family != BlockFamily::kKQuant) return {};
  const CodeFacts& f = row.codes;
  std::vector<float> parts(elements);
  for (int64_t b = 0; b < elements / row.block_size; ++b) {
    UnpackedBlock u;
    row.unpack(w.data() + b * row.block_bytes, &u);
    for (int e = 0; e < row.block_size; ++e) {
      const int s = e / f.sub_block;
      const float q = f.levels != nullptr ? f.levels[u.codes[e]] : u.codes[e] - f.zero;
      const float sc = f.has_min ? u.sc[s] : static_cast<int8_t>(u.sc[s]);
      parts[b * row.block_size + e] =
          std::abs(u.d * sc * q) + (f.has_min ? std::abs(u.dmin * u.mn[s]) : 0.0f);
    }
  }
  return parts;
}

}  // namespace kite::testing
