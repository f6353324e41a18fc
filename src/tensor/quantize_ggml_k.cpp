// llama.cpp's k-quant quantizers (ggml-quants.c): without importance its quantize_row_*_ref,
// with importance its quantize_row_*_impl, as ggml_quantize_chunk picks them. Each super-block:
// a scale search per sub-block (quantize_search.h), a second search (or a max) for the integer
// sub-block scales under the f16 super-scale, then every code requantized from the rounded
// scales. Arithmetic follows ggml's step for step so that the bytes match.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/half.h"
#include "tensor/quantize_k.h"
#include "tensor/quantize_search.h"

namespace kite::internal {

namespace {

// The weights of one sub-block as the importance-weighted searches take them: the importance
// scaled by the element's magnitude against the super-block's spread sigma2.
void ImportanceWeights(const float* qw, const float* x, int n, float sigma2, float* weights) {
  for (int l = 0; l < n; ++l) weights[l] = qw[l] * std::sqrt(sigma2 + x[l] * x[l]);
}

float SumSquares(const float* x, int n) {
  float sum = 0;
  for (int l = 0; l < n; ++l) sum += x[l] * x[l];
  return sum;
}

float Sum(const float* x, int n) {
  float sum = 0;
  for (int l = 0; l < n; ++l) sum += x[l];
  return sum;
}

// --- q2_K: 16 sub-blocks of 16, 2-bit codes, 4-bit scales and mins.

BlockQ2_K Q2_K(const float* x, const float* qw) {
  BlockQ2_K y{};
  uint8_t L[kQKK];
  uint8_t Laux[16];
  float weights[16];
  float scales[16];
  float mins[16];
  if (qw == nullptr) {
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < 16; ++j) {
      for (int l = 0; l < 16; ++l) weights[l] = std::fabs(x[16 * j + l]);
      scales[j] = MakeQkx2Quants(16, 3, x + 16 * j, weights, L + 16 * j, &mins[j], Laux, -0.5f,
                                 0.1f, 15, true);
      if (scales[j] > max_scale) max_scale = scales[j];
      if (mins[j] > max_min) max_min = mins[j];
    }
    if (max_scale > 0) {
      const float iscale = 15.f / max_scale;
      for (int j = 0; j < 16; ++j) y.scales[j] = static_cast<uint8_t>(NearestInt(iscale * scales[j]));
      y.d = F32ToF16(max_scale / 15.f);
    }
    if (max_min > 0) {
      const float iscale = 15.f / max_min;
      for (int j = 0; j < 16; ++j) {
        y.scales[j] |= static_cast<uint8_t>(NearestInt(iscale * mins[j]) << 4);
      }
      y.dmin = F32ToF16(max_min / 15.f);
    }
  } else {
    const float sigma2 = SumSquares(x, kQKK) / kQKK;
    float sw[16];
    uint8_t Ls[16], Lm[16];
    for (int j = 0; j < 16; ++j) {
      ImportanceWeights(qw + 16 * j, x + 16 * j, 16, sigma2, weights);
      sw[j] = Sum(weights, 16);
      scales[j] = MakeQkx3Quants(16, 3, x + 16 * j, weights, L + 16 * j, &mins[j], Laux, -0.9f,
                                 0.05f, 36, false);
    }
    const float dm = MakeQpQuants(16, 15, scales, Ls, sw);
    const float mm = MakeQpQuants(16, 15, mins, Lm, sw);
    y.d = F32ToF16(dm);
    y.dmin = F32ToF16(mm);
    for (int j = 0; j < 16; ++j) y.scales[j] = static_cast<uint8_t>(Ls[j] | (Lm[j] << 4));
  }
  const float d_all = F16ToF32(y.d);
  const float m_all = F16ToF32(y.dmin);
  for (int j = 0; j < 16; ++j) {
    const float d = d_all * static_cast<float>(y.scales[j] & 0xf);
    if (d == 0) continue;  // the search's codes stay
    const float m = m_all * static_cast<float>(y.scales[j] >> 4);
    for (int l = 0; l < 16; ++l) {
      L[16 * j + l] = static_cast<uint8_t>(std::clamp(NearestInt((x[16 * j + l] + m) / d), 0, 3));
    }
  }
  PackTwoBit(L, y.qs);
  return y;
}

// --- q3_K: 16 sub-blocks of 16, 3-bit codes (value - 4), signed 6-bit scales.

BlockQ3_K Q3_K(const float* x, const float* qw) {
  BlockQ3_K y{};
  int8_t L[kQKK];
  float scales[16];
  int8_t packed[16];  // the sub-block scales, -32..31
  if (qw == nullptr) {
    float max_scale = 0, amax = 0;
    for (int j = 0; j < 16; ++j) {
      scales[j] = MakeQ3Quants(16, 4, x + 16 * j, L + 16 * j, true);
      if (std::fabs(scales[j]) > amax) {
        amax = std::fabs(scales[j]);
        max_scale = scales[j];
      }
    }
    if (max_scale != 0) {
      const float iscale = -32.f / max_scale;
      for (int j = 0; j < 16; ++j) {
        packed[j] = static_cast<int8_t>(std::clamp(NearestInt(iscale * scales[j]), -32, 31));
      }
      y.d = F32ToF16(1 / iscale);
      PackQ3KScales(packed, y.scales);
    }  // else an all-zero block: d and the scale bytes stay 0 (not the biased 0 scale, 32)
  } else {
    const float sigma2 = 2 * SumSquares(x, kQKK) / kQKK;
    float weights[16];
    float sw[16];
    int8_t Ls[16];
    for (int j = 0; j < 16; ++j) {
      ImportanceWeights(qw + 16 * j, x + 16 * j, 16, sigma2, weights);
      sw[j] = Sum(weights, 16);
      scales[j] = MakeQxQuants(16, 4, x + 16 * j, L + 16 * j, 1, weights);
    }
    const float d_block = MakeQxQuants(16, 32, scales, Ls, 1, sw);
    for (int j = 0; j < 16; ++j) packed[j] = static_cast<int8_t>(Ls[j] - 32);
    y.d = F32ToF16(d_block);
    PackQ3KScales(packed, y.scales);
  }
  const float d_all = F16ToF32(y.d);
  for (int j = 0; j < 16; ++j) {
    const float d = d_all * static_cast<float>(UnpackQ3KScale(y.scales, j));
    if (d == 0) continue;  // the search's codes (already biased by 4) stay
    for (int l = 0; l < 16; ++l) {
      L[16 * j + l] = static_cast<int8_t>(std::clamp(NearestInt(x[16 * j + l] / d), -4, 3) + 4);
    }
  }
  uint8_t codes[kQKK];
  for (int e = 0; e < kQKK; ++e) codes[e] = static_cast<uint8_t>(L[e]);
  PackTwoBit(codes, y.qs);
  PackBitPlane(codes, 2, y.hmask);
  return y;
}

// --- q4_K and q5_K: 8 sub-blocks of 32, 6-bit scales and mins under f16 d and dmin.

template <typename Block, int kMaxQ>
Block Q45_K(const float* x, const float* qw) {
  Block y{};
  uint8_t L[kQKK];
  uint8_t Laux[32];
  float weights[32];
  float scales[8];
  float mins[8];
  uint8_t Ls[8], Lm[8];
  if (qw == nullptr) {
    // The reference quantizer: weights from each sub-block's own spread; q4_K and q5_K differ in
    // the trial scales.
    constexpr float kRmin = kMaxQ == 15 ? -1.f : -0.5f;
    constexpr int kSteps = kMaxQ == 15 ? 20 : 15;
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < 8; ++j) {
      const float av_x = std::sqrt(SumSquares(x + 32 * j, 32) / 32);
      for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(x[32 * j + l]);
      scales[j] = MakeQkx2Quants(32, kMaxQ, x + 32 * j, weights, L + 32 * j, &mins[j], Laux,
                                 kRmin, 0.1f, kSteps, false);
      if (scales[j] > max_scale) max_scale = scales[j];
      if (mins[j] > max_min) max_min = mins[j];
    }
    const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
    const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
    for (int j = 0; j < 8; ++j) {
      // ggml keeps the rounded value in a byte before capping it at 63.
      Ls[j] = std::min<uint8_t>(63, static_cast<uint8_t>(NearestInt(inv_scale * scales[j])));
      Lm[j] = std::min<uint8_t>(63, static_cast<uint8_t>(NearestInt(inv_min * mins[j])));
    }
    y.d = F32ToF16(max_scale / 63.f);
    y.dmin = F32ToF16(max_min / 63.f);
  } else {
    const float sigma2 = 2 * SumSquares(x, kQKK) / kQKK;
    float sw[8];
    for (int j = 0; j < 8; ++j) {
      ImportanceWeights(qw + 32 * j, x + 32 * j, 32, sigma2, weights);
      sw[j] = Sum(weights, 32);
      scales[j] = MakeQkx3Quants(32, kMaxQ, x + 32 * j, weights, L + 32 * j, &mins[j], Laux,
                                 -0.9f, 0.05f, 36, false);
    }
    y.d = F32ToF16(MakeQpQuants(8, 63, scales, Ls, sw));
    y.dmin = F32ToF16(MakeQpQuants(8, 63, mins, Lm, sw));
    if constexpr (kMaxQ == 31) {  // ggml caps q5_K's (a code wrapped from a negative scale)
      for (int j = 0; j < 8; ++j) {
        Ls[j] = std::min<uint8_t>(63, Ls[j]);
        Lm[j] = std::min<uint8_t>(63, Lm[j]);
      }
    }
  }
  PackScaleMinK4(Ls, Lm, y.scales);
  const float d_all = F16ToF32(y.d);
  const float m_all = F16ToF32(y.dmin);
  for (int j = 0; j < 8; ++j) {
    const ScaleMin sm = UnpackScaleMinK4(y.scales, j);
    const float d = d_all * static_cast<float>(sm.scale);
    if (d == 0) continue;  // the search's codes stay
    const float dm = m_all * static_cast<float>(sm.min);
    for (int l = 0; l < 32; ++l) {
      L[32 * j + l] =
          static_cast<uint8_t>(std::clamp(NearestInt((x[32 * j + l] + dm) / d), 0, kMaxQ));
    }
  }
  PackFourBit(L, y.qs);
  if constexpr (kMaxQ == 31) PackBitPlane(L, 4, y.qh);
  return y;
}

// --- q6_K: 16 sub-blocks of 16, 6-bit codes (value - 32), int8 scales.

BlockQ6_K Q6_K(const float* x, const float* qw) {
  BlockQ6_K y{};
  int8_t L[kQKK];
  float scales[16];
  float max_scale = 0, max_abs_scale = 0;
  for (int j = 0; j < 16; ++j) {
    // With importance the weights are the importance itself (no sigma2 term), unlike the others.
    scales[j] = MakeQxQuants(16, 32, x + 16 * j, L + 16 * j, 1, qw ? qw + 16 * j : nullptr);
    if (std::fabs(scales[j]) > max_abs_scale) {
      max_abs_scale = std::fabs(scales[j]);
      max_scale = scales[j];
    }
  }
  if (max_abs_scale < 1e-15f) return y;  // all zero: d = 0, every byte 0
  const float iscale = -128.f / max_scale;
  y.d = F32ToF16(1 / iscale);
  for (int j = 0; j < 16; ++j) {
    y.scales[j] = static_cast<int8_t>(std::min(127, NearestInt(iscale * scales[j])));
  }
  const float d_all = F16ToF32(y.d);
  for (int j = 0; j < 16; ++j) {
    const float d = d_all * static_cast<float>(y.scales[j]);
    if (d == 0) continue;  // the search's codes stay
    for (int l = 0; l < 16; ++l) {
      L[16 * j + l] = static_cast<int8_t>(std::clamp(NearestInt(x[16 * j + l] / d), -32, 31) + 32);
    }
  }
  uint8_t codes[kQKK];
  for (int e = 0; e < kQKK; ++e) codes[e] = static_cast<uint8_t>(L[e]);
  PackSixBit(codes, y);
  return y;
}

template <typename Block, Block (*Quantize)(const float*, const float*)>
void SearchRow(const float* x, void* dst, int64_t n, const float* importance) {
  auto* out = static_cast<uint8_t*>(dst);
  for (int64_t i = 0; i < n / kQKK; ++i) {
    const Block block = Quantize(x + i * kQKK, importance ? importance + i * kQKK : nullptr);
    std::memcpy(out + i * static_cast<int64_t>(sizeof(Block)), &block, sizeof(Block));
  }
}

}  // namespace

void SearchQ2_KRow(const float* x, void* dst, int64_t n, const float* importance) {
  SearchRow<BlockQ2_K, Q2_K>(x, dst, n, importance);
}
void SearchQ3_KRow(const float* x, void* dst, int64_t n, const float* importance) {
  SearchRow<BlockQ3_K, Q3_K>(x, dst, n, importance);
}
void SearchQ4_KRow(const float* x, void* dst, int64_t n, const float* importance) {
  SearchRow<BlockQ4_K, Q45_K<BlockQ4_K, 15>>(x, dst, n, importance);
}
void SearchQ5_KRow(const float* x, void* dst, int64_t n, const float* importance) {
  SearchRow<BlockQ5_K, Q45_K<BlockQ5_K, 31>>(x, dst, n, importance);
}
void SearchQ6_KRow(const float* x, void* dst, int64_t n, const float* importance) {
  SearchRow<BlockQ6_K, Q6_K>(x, dst, n, importance);
}

}  // namespace kite::internal
