// ggml's k-quants: super-blocks of 256 elements in sub-blocks with integer scales (q2_K, q3_K,
// q4_K, q5_K, q6_K) and q8_K, the activation type of ggml's k-quant dot products. The
// quantizers of q2_K … q6_K are Kite's round-to-nearest ones (quantize_k.h).
#include <algorithm>
#include <cmath>

#include "base/half.h"
#include "tensor/quant_blocks.h"
#include "tensor/quantize_k.h"
#include "tensor/types/block_rows.h"
#include "tensor/types/families.h"

namespace kite::internal {

namespace {

// Outer loop over the two 128-element halves, then the four bit positions of a byte, then the
// two sub-blocks of 16 that share those bytes: elements come out in order.
void DecodeQ2_K(const BlockQ2_K& b, float* y) {
  const float d = F16ToF32(b.d);
  const float dmin = F16ToF32(b.dmin);
  for (int half = 0; half < 2; ++half) {
    const uint8_t* q = b.qs + 32 * half;
    for (int shift = 0; shift < 8; shift += 2) {
      for (int part = 0; part < 2; ++part) {
        const uint8_t sc = b.scales[8 * half + shift + part];
        const float dl = d * static_cast<float>(sc & 0xf);
        const float ml = dmin * static_cast<float>(sc >> 4);
        for (int l = 16 * part; l < 16 * part + 16; ++l) {
          *y++ = dl * static_cast<float>((q[l] >> shift) & 3) - ml;
        }
      }
    }
  }
}

void DecodeQ3_K(const BlockQ3_K& b, float* y) {
  const float d = F16ToF32(b.d);
  for (int half = 0; half < 2; ++half) {
    const uint8_t* q = b.qs + 32 * half;
    for (int shift = 0; shift < 8; shift += 2) {
      const uint8_t high_bit = static_cast<uint8_t>(1u << (4 * half + shift / 2));
      for (int part = 0; part < 2; ++part) {
        const float dl = d * static_cast<float>(UnpackQ3KScale(b.scales, 8 * half + shift + part));
        for (int l = 16 * part; l < 16 * part + 16; ++l) {
          const int code = ((q[l] >> shift) & 3) - ((b.hmask[l] & high_bit) ? 0 : 4);
          *y++ = dl * static_cast<float>(code);
        }
      }
    }
  }
}

// q4_K and q5_K: each 64-element chunk is two sub-blocks sharing 32 bytes of nibbles.
void DecodeQ4_K(const BlockQ4_K& b, float* y) {
  const float d = F16ToF32(b.d);
  const float dmin = F16ToF32(b.dmin);
  for (int chunk = 0; chunk < 4; ++chunk) {
    const uint8_t* q = b.qs + 32 * chunk;
    for (int part = 0; part < 2; ++part) {
      const ScaleMin sm = UnpackScaleMinK4(b.scales, 2 * chunk + part);
      const float dl = d * static_cast<float>(sm.scale);
      const float ml = dmin * static_cast<float>(sm.min);
      const int shift = 4 * part;
      for (int l = 0; l < 32; ++l) *y++ = dl * static_cast<float>((q[l] >> shift) & 0xf) - ml;
    }
  }
}

void DecodeQ5_K(const BlockQ5_K& b, float* y) {
  const float d = F16ToF32(b.d);
  const float dmin = F16ToF32(b.dmin);
  for (int chunk = 0; chunk < 4; ++chunk) {
    const uint8_t* q = b.qs + 32 * chunk;
    for (int part = 0; part < 2; ++part) {
      const int sub = 2 * chunk + part;
      const ScaleMin sm = UnpackScaleMinK4(b.scales, sub);
      const float dl = d * static_cast<float>(sm.scale);
      const float ml = dmin * static_cast<float>(sm.min);
      const int shift = 4 * part;
      for (int l = 0; l < 32; ++l) {
        const int code = ((q[l] >> shift) & 0xf) | ((b.qh[l] >> sub) & 1) << 4;
        *y++ = dl * static_cast<float>(code) - ml;
      }
    }
  }
}

void DecodeQ6_K(const BlockQ6_K& b, float* y) {
  const float d = F16ToF32(b.d);
  for (int half = 0; half < 2; ++half) {
    const uint8_t* ql = b.ql + 64 * half;
    const uint8_t* qh = b.qh + 32 * half;
    for (int quarter = 0; quarter < 4; ++quarter) {
      const uint8_t* low = ql + 32 * (quarter % 2);
      const int low_shift = 4 * (quarter / 2);
      const int high_shift = 2 * quarter;
      for (int part = 0; part < 2; ++part) {
        const float dl = d * static_cast<float>(b.scales[8 * half + 2 * quarter + part]);
        for (int l = 16 * part; l < 16 * part + 16; ++l) {
          const int code = ((low[l] >> low_shift) & 0xf) | ((qh[l] >> high_shift) & 3) << 4;
          *y++ = dl * static_cast<float>(code - 32);
        }
      }
    }
  }
}

void DecodeQ8_K(const BlockQ8_K& b, float* y) {
  for (int j = 0; j < kQKK; ++j) y[j] = b.d * static_cast<float>(b.qs[j]);
}

// As ggml's quantize_row_q8_K_ref: the largest-magnitude element maps to -127, codes round to
// nearest even, and d is kept as an F32.
BlockQ8_K EncodeQ8_K(const float* x) {
  BlockQ8_K b{};
  float amax = 0.0f;
  float max = 0.0f;
  for (int j = 0; j < kQKK; ++j) {
    if (std::fabs(x[j]) > amax) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  if (amax == 0.0f) return b;  // d = 0, all codes and sums 0
  const float iscale = -127.0f / max;
  for (int j = 0; j < kQKK; ++j) {
    b.qs[j] = static_cast<int8_t>(std::min(127.0f, std::nearbyint(iscale * x[j])));
  }
  for (int g = 0; g < kQKK / 16; ++g) {
    int sum = 0;
    for (int j = 16 * g; j < 16 * g + 16; ++j) sum += b.qs[j];
    b.bsums[g] = static_cast<int16_t>(sum);
  }
  b.d = 1 / iscale;
  return b;
}

// q4_K and q5_K share the scale packing and the placement of the low four bits.
template <typename Block, bool kFive>
void UnpackQ45_K(const void* block, UnpackedBlock* out) {
  const auto b = ReadBlock<Block>(block);
  out->d = F16ToF32(b.d);
  out->dmin = F16ToF32(b.dmin);
  for (int j = 0; j < 8; ++j) {
    const ScaleMin sm = UnpackScaleMinK4(b.scales, j);
    out->sc[j] = sm.scale;
    out->mn[j] = sm.min;
  }
  // Sub-block by sub-block, its 32 elements an inner loop of contiguous bytes the compiler
  // vectorizes (packing a model at load unpacks every super-block once).
  for (int sub = 0; sub < 8; ++sub) {
    const uint8_t* qs = b.qs + 32 * (sub / 2);
    for (int l = 0; l < 32; ++l) {
      int code = (qs[l] >> (4 * (sub % 2))) & 0xf;
      if constexpr (kFive) code |= ((b.qh[l] >> sub) & 1) << 4;
      out->codes[32 * sub + l] = static_cast<uint8_t>(code);
    }
  }
}

void UnpackQ6_K(const void* block, UnpackedBlock* out) {
  const auto b = ReadBlock<BlockQ6_K>(block);
  out->d = F16ToF32(b.d);
  for (int j = 0; j < 16; ++j) out->sc[j] = static_cast<uint8_t>(b.scales[j]);
  // Element 128h + 32k + l, l innermost (contiguous bytes, vectorized): see UnpackQ45_K.
  for (int h = 0; h < 2; ++h) {
    const uint8_t* qh = b.qh + 32 * h;
    for (int k = 0; k < 4; ++k) {
      const uint8_t* ql = b.ql + 64 * h + 32 * (k % 2);
      uint8_t* codes = out->codes + 128 * h + 32 * k;
      for (int l = 0; l < 32; ++l) {
        const int low = (ql[l] >> (4 * (k / 2))) & 0xf;
        const int high = (qh[l] >> (2 * k)) & 3;
        codes[l] = static_cast<uint8_t>(low | high << 4);
      }
    }
  }
}

constexpr CodeFacts KQuant(int32_t bits, int32_t zero, bool has_min, int32_t sub_block) {
  return {.family = BlockFamily::kKQuant,
          .code_bits = bits,
          .zero = zero,
          .has_min = has_min,
          .sub_block = sub_block};
}

constexpr DTypeRow kRows[] = {
    {.dtype = DType::kQ2_K,
     .name = "q2_K",
     .block_size = kQKK,
     .block_bytes = sizeof(BlockQ2_K),
     .dequantize = DequantizeBlocks<BlockQ2_K, kQKK, DecodeQ2_K>,
     .quantize = QuantizeBlocks<BlockQ2_K, kQKK, QuantizeQ2_KBlock>,
     .quantize_input = QuantizeInput::kF16Range,
     .quantize_search = SearchQ2_KRow,
     .codes = KQuant(2, 0, true, 16),
     .fallback = DType::kIQ4_NL},
    {.dtype = DType::kQ3_K,
     .name = "q3_K",
     .block_size = kQKK,
     .block_bytes = sizeof(BlockQ3_K),
     .dequantize = DequantizeBlocks<BlockQ3_K, kQKK, DecodeQ3_K>,
     .quantize = QuantizeBlocks<BlockQ3_K, kQKK, QuantizeQ3_KBlock>,
     .quantize_input = QuantizeInput::kF16Range,
     .quantize_search = SearchQ3_KRow,
     .codes = KQuant(3, 4, false, 16),
     .fallback = DType::kIQ4_NL},
    {.dtype = DType::kQ4_K,
     .name = "q4_K",
     .block_size = kQKK,
     .block_bytes = sizeof(BlockQ4_K),
     .dequantize = DequantizeBlocks<BlockQ4_K, kQKK, DecodeQ4_K>,
     .quantize = QuantizeBlocks<BlockQ4_K, kQKK, QuantizeQ4_KBlock>,
     .quantize_input = QuantizeInput::kF16Range,
     .quantize_search = SearchQ4_KRow,
     .codes = KQuant(4, 0, true, 32),
     .unpack = UnpackQ45_K<BlockQ4_K, false>,
     .file_type = 14,  // LLAMA_FTYPE_MOSTLY_Q4_K_S
     .fallback = DType::kQ5_0},
    {.dtype = DType::kQ5_K,
     .name = "q5_K",
     .block_size = kQKK,
     .block_bytes = sizeof(BlockQ5_K),
     .dequantize = DequantizeBlocks<BlockQ5_K, kQKK, DecodeQ5_K>,
     .quantize = QuantizeBlocks<BlockQ5_K, kQKK, QuantizeQ5_KBlock>,
     .quantize_input = QuantizeInput::kF16Range,
     .quantize_search = SearchQ5_KRow,
     .codes = KQuant(5, 0, true, 32),
     .unpack = UnpackQ45_K<BlockQ5_K, true>,
     .file_type = 16,  // LLAMA_FTYPE_MOSTLY_Q5_K_S
     .fallback = DType::kQ5_1},
    {.dtype = DType::kQ6_K,
     .name = "q6_K",
     .block_size = kQKK,
     .block_bytes = sizeof(BlockQ6_K),
     .dequantize = DequantizeBlocks<BlockQ6_K, kQKK, DecodeQ6_K>,
     .quantize = QuantizeBlocks<BlockQ6_K, kQKK, QuantizeQ6_KBlock>,
     .quantize_input = QuantizeInput::kF16Range,
     .quantize_search = SearchQ6_KRow,
     .codes = KQuant(6, 32, false, 16),
     .unpack = UnpackQ6_K,
     .file_type = 18,  // LLAMA_FTYPE_MOSTLY_Q6_K
     .fallback = DType::kQ8_0},
    // The activation type of ggml's k-quant dot products: one f32 scale, no sub-block scales.
    {.dtype = DType::kQ8_K,
     .name = "q8_K",
     .block_size = kQKK,
     .block_bytes = sizeof(BlockQ8_K),
     .dequantize = DequantizeBlocks<BlockQ8_K, kQKK, DecodeQ8_K>,
     .quantize = QuantizeBlocks<BlockQ8_K, kQKK, EncodeQ8_K>,
     .quantize_input = QuantizeInput::kFinite},
};

}  // namespace

std::span<const DTypeRow> KQuantRows() { return kRows; }

}  // namespace kite::internal
