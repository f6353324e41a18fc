// ggml's non-linear 4-bit types: iq4_nl (blocks of 32 under an f16 scale) and iq4_xs (super-blocks
// of 256: 8 sub-blocks of 32 under 6-bit scales). A code picks one of 16 unevenly spaced levels
// (kIQ4Levels), denser near zero where weights cluster.
//
// The quantizer is llama.cpp's quantize_row_iq4_nl_impl as ggml_quantize_chunk runs it (15 trial
// scales, importance-weighted when given); Quantize writes the same bytes without importance.
// For the cpu backend a block unpacks to its 4-bit level indices and scales (iq4_xs: one int8
// scale per 16 elements, q6_K's shape); the row's `levels` tell the kernels what an index
// stands for, and they look the levels up as they read the codes.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/half.h"
#include "tensor/quant_blocks.h"
#include "tensor/quantize_search.h"
#include "tensor/types/block_rows.h"
#include "tensor/types/families.h"

namespace kite::internal {

namespace {

constexpr int kTrials = 7;  // trial inverse scales (level[0] ± 7)/max

float Level(int q) { return static_cast<float>(kIQ4Levels[q]); }

int NearestLevel(float x) { return BestIndexInt8(16, kIQ4Levels, x); }

// The scale of one sub-block of 32 (its codes left in L, for the scale before the search), with
// the search's weights: importance × sqrt(sigma2 + x²), or x² without importance.
float SubBlockScale(const float* x, const float* qw, float sigma2, uint8_t* L) {
  float weight[32];
  for (int j = 0; j < 32; ++j) {
    weight[j] = qw != nullptr ? qw[j] * std::sqrt(sigma2 + x[j] * x[j]) : x[j] * x[j];
  }
  float amax = 0, max = 0;
  for (int j = 0; j < 32; ++j) {
    if (std::fabs(x[j]) > amax) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  if (amax < 1e-15f) {
    std::memset(L, 0, 32);
    return 0.0f;
  }
  // Sums of w·q·x and w·q² for the codes at inverse scale id; d = sumqx/sumq2 is then the best
  // scale for those codes, and sumqx²/sumq2 the error it removes.
  auto fit = [&](float id, float& sumqx, float& sumq2, uint8_t* codes) {
    sumqx = sumq2 = 0;
    for (int j = 0; j < 32; ++j) {
      const int l = NearestLevel(id * x[j]);
      if (codes != nullptr) codes[j] = static_cast<uint8_t>(l);
      const float q = Level(l);
      sumqx += weight[j] * q * x[j];
      sumq2 += weight[j] * q * q;
    }
  };
  float sumqx, sumq2;
  fit(1 / (-max / Level(0)), sumqx, sumq2, L);
  float d = sumq2 > 0 ? sumqx / sumq2 : 0.f;
  float best = d * sumqx;
  for (int itry = -kTrials; itry <= kTrials; ++itry) {
    fit(static_cast<float>(itry + kIQ4Levels[0]) / max, sumqx, sumq2, nullptr);
    if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
      d = sumqx / sumq2;
      best = d * sumqx;
    }
  }
  return d;
}

float Sigma2(const float* x, int n) {
  float sum = 0;
  for (int j = 0; j < n; ++j) sum += x[j] * x[j];
  return sum * (2.f / static_cast<float>(n));
}

void PackCodes(const uint8_t* L, int n, uint8_t* qs) {
  for (int i = 0; i < n / 32; ++i) {
    for (int j = 0; j < 16; ++j) {
      qs[16 * i + j] = static_cast<uint8_t>(L[32 * i + j] | (L[32 * i + 16 + j] << 4));
    }
  }
}

BlockIQ4_NL SearchIQ4_NL(const float* x, const float* qw) {
  uint8_t L[32];
  const float d = SubBlockScale(x, qw, Sigma2(x, 32), L);
  BlockIQ4_NL b;
  b.d = F32ToF16(d);
  const float id = d != 0 ? 1 / d : 0;
  for (int j = 0; j < 32; ++j) L[j] = static_cast<uint8_t>(NearestLevel(id * x[j]));
  PackCodes(L, 32, b.qs);
  return b;
}

BlockIQ4_XS SearchIQ4_XS(const float* x, const float* qw) {
  uint8_t L[kQKK];
  float scales[8];
  const float sigma2 = Sigma2(x, kQKK);
  float max_scale = 0, amax_scale = 0;
  for (int ib = 0; ib < 8; ++ib) {
    scales[ib] = SubBlockScale(x + 32 * ib, qw ? qw + 32 * ib : nullptr, sigma2, L + 32 * ib);
    if (std::fabs(scales[ib]) > amax_scale) {
      amax_scale = std::fabs(scales[ib]);
      max_scale = scales[ib];
    }
  }
  BlockIQ4_XS b{};
  // The unrounded super-scale sizes the 6-bit scales and the codes (as in ggml); an all-zero
  // super-block keeps -0 as its f16 scale.
  const float d = -max_scale / 32;
  b.d = F32ToF16(d);
  const float id = d != 0 ? 1 / d : 0.f;
  for (int ib = 0; ib < 8; ++ib) {
    const int l = std::clamp(NearestInt(id * scales[ib]), -32, 31);
    const float dl = d * static_cast<float>(l);
    const float idl = dl != 0 ? 1 / dl : 0.f;
    for (int j = 0; j < 32; ++j) {
      L[32 * ib + j] = static_cast<uint8_t>(NearestLevel(idl * x[32 * ib + j]));
    }
    const int biased = l + 32;
    b.scales_l[ib / 2] |= static_cast<uint8_t>((biased & 0xf) << (4 * (ib % 2)));
    b.scales_h |= static_cast<uint16_t>((biased >> 4) << (2 * ib));
  }
  PackCodes(L, kQKK, b.qs);
  return b;
}

template <typename Block, int kElements, Block (*Search)(const float*, const float*)>
void SearchRow(const float* x, void* dst, int64_t n, const float* importance) {
  auto* out = static_cast<uint8_t*>(dst);
  for (int64_t i = 0; i < n / kElements; ++i) {
    const Block block = Search(x + i * kElements, importance ? importance + i * kElements : nullptr);
    std::memcpy(out + i * static_cast<int64_t>(sizeof(Block)), &block, sizeof(Block));
  }
}

template <typename Block, int kElements, Block (*Search)(const float*, const float*)>
void QuantizeRow(const float* x, void* dst, int64_t n) {
  SearchRow<Block, kElements, Search>(x, dst, n, nullptr);
}

int SubBlockScaleXS(const BlockIQ4_XS& b, int ib) {
  return (((b.scales_l[ib / 2] >> (4 * (ib % 2))) & 0xf) | (((b.scales_h >> (2 * ib)) & 3) << 4)) -
         32;
}

void DecodeIQ4_NL(const BlockIQ4_NL& b, float* y) {
  const float d = F16ToF32(b.d);
  for (int j = 0; j < 16; ++j) {
    y[j] = d * Level(b.qs[j] & 0xf);
    y[j + 16] = d * Level(b.qs[j] >> 4);
  }
}

void DecodeIQ4_XS(const BlockIQ4_XS& b, float* y) {
  const float d = F16ToF32(b.d);
  for (int ib = 0; ib < 8; ++ib) {
    const float dl = d * static_cast<float>(SubBlockScaleXS(b, ib));
    for (int j = 0; j < 16; ++j) {
      y[32 * ib + j] = dl * Level(b.qs[16 * ib + j] & 0xf);
      y[32 * ib + j + 16] = dl * Level(b.qs[16 * ib + j] >> 4);
    }
  }
}

// Level indices in element order.
void UnpackIndices(const uint8_t* qs, int n, uint8_t* codes) {
  for (int i = 0; i < n / 32; ++i) {
    for (int j = 0; j < 16; ++j) {
      codes[32 * i + j] = qs[16 * i + j] & 0xf;
      codes[32 * i + j + 16] = qs[16 * i + j] >> 4;
    }
  }
}

void UnpackIQ4_NL(const void* block, UnpackedBlock* out) {
  const auto b = ReadBlock<BlockIQ4_NL>(block);
  out->d16 = b.d;
  UnpackIndices(b.qs, 32, out->codes);
}

// One signed scale per sub-block of 32 (as bytes).
void UnpackIQ4_XS(const void* block, UnpackedBlock* out) {
  const auto b = ReadBlock<BlockIQ4_XS>(block);
  out->d = F16ToF32(b.d);
  for (int ib = 0; ib < 8; ++ib) {
    out->sc[ib] = static_cast<uint8_t>(static_cast<int8_t>(SubBlockScaleXS(b, ib)));
  }
  UnpackIndices(b.qs, kQKK, out->codes);
}

constexpr DTypeRow kRows[] = {
    {.dtype = DType::kIQ4_NL,
     .name = "iq4_nl",
     .block_size = kQK,
     .block_bytes = sizeof(BlockIQ4_NL),
     .dequantize = DequantizeBlocks<BlockIQ4_NL, kQK, DecodeIQ4_NL>,
     .quantize = QuantizeRow<BlockIQ4_NL, kQK, SearchIQ4_NL>,
     .quantize_input = QuantizeInput::kF16Range,
     .quantize_search = SearchRow<BlockIQ4_NL, kQK, SearchIQ4_NL>,
     .codes = {.family = BlockFamily::kLegacy,
               .code_bits = 4,
               .zero = 0,
               .has_min = false,
               .sub_block = kQK,
               .levels = kIQ4Levels},
     .unpack = UnpackIQ4_NL,
     .file_type = 25},  // LLAMA_FTYPE_MOSTLY_IQ4_NL
    {.dtype = DType::kIQ4_XS,
     .name = "iq4_xs",
     .block_size = kQKK,
     .block_bytes = sizeof(BlockIQ4_XS),
     .dequantize = DequantizeBlocks<BlockIQ4_XS, kQKK, DecodeIQ4_XS>,
     .quantize = QuantizeRow<BlockIQ4_XS, kQKK, SearchIQ4_XS>,
     .quantize_input = QuantizeInput::kF16Range,
     .quantize_search = SearchRow<BlockIQ4_XS, kQKK, SearchIQ4_XS>,
     .codes = {.family = BlockFamily::kKQuant,
               .code_bits = 4,
               .zero = 0,
               .has_min = false,
               .sub_block = kQK,
               .levels = kIQ4Levels},
     .unpack = UnpackIQ4_XS,
     .file_type = 30,  // LLAMA_FTYPE_MOSTLY_IQ4_XS
     .fallback = DType::kIQ4_NL},
};

}  // namespace

std::span<const DTypeRow> NonLinearQuantRows() { return kRows; }

}  // namespace kite::internal
