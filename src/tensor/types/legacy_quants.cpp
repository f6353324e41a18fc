// ggml's legacy block types: 32 elements under one f16 scale (q4_0, q4_1, q5_0, q5_1, q8_0,
// q8_1). The quantizers repeat ggml's quantize_row_*_ref arithmetic step for step (the scale
// from the unrounded max, codes from 1/d, truncation after adding 0.5 or 8.5, roundf for q8_0),
// so the bytes match the files llama.cpp writes.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>

#include "base/half.h"
#include "tensor/quant_blocks.h"
#include "tensor/quantize_search.h"
#include "tensor/types/block_rows.h"
#include "tensor/types/families.h"

namespace kite::internal {

namespace {

// The fifth bits of q5_0/q5_1 as one little-endian word.
uint32_t HighBits(const uint8_t (&qh)[4]) {
  return static_cast<uint32_t>(qh[0]) | static_cast<uint32_t>(qh[1]) << 8 |
         static_cast<uint32_t>(qh[2]) << 16 | static_cast<uint32_t>(qh[3]) << 24;
}

void DecodeQ4_0(const BlockQ4_0& b, float* y) {
  const float d = F16ToF32(b.d);
  for (int j = 0; j < kQK / 2; ++j) {
    y[j] = static_cast<float>((b.qs[j] & 0xf) - 8) * d;
    y[j + kQK / 2] = static_cast<float>((b.qs[j] >> 4) - 8) * d;
  }
}

void DecodeQ4_1(const BlockQ4_1& b, float* y) {
  const float d = F16ToF32(b.d);
  const float m = F16ToF32(b.m);
  for (int j = 0; j < kQK / 2; ++j) {
    y[j] = static_cast<float>(b.qs[j] & 0xf) * d + m;
    y[j + kQK / 2] = static_cast<float>(b.qs[j] >> 4) * d + m;
  }
}

void DecodeQ5_0(const BlockQ5_0& b, float* y) {
  const float d = F16ToF32(b.d);
  const uint32_t qh = HighBits(b.qh);
  for (int j = 0; j < kQK / 2; ++j) {
    const int lo = (b.qs[j] & 0xf) | ((qh >> j) & 1) << 4;
    const int hi = (b.qs[j] >> 4) | ((qh >> (j + kQK / 2)) & 1) << 4;
    y[j] = static_cast<float>(lo - 16) * d;
    y[j + kQK / 2] = static_cast<float>(hi - 16) * d;
  }
}

void DecodeQ5_1(const BlockQ5_1& b, float* y) {
  const float d = F16ToF32(b.d);
  const float m = F16ToF32(b.m);
  const uint32_t qh = HighBits(b.qh);
  for (int j = 0; j < kQK / 2; ++j) {
    const int lo = (b.qs[j] & 0xf) | ((qh >> j) & 1) << 4;
    const int hi = (b.qs[j] >> 4) | ((qh >> (j + kQK / 2)) & 1) << 4;
    y[j] = static_cast<float>(lo) * d + m;
    y[j + kQK / 2] = static_cast<float>(hi) * d + m;
  }
}

void DecodeQ8_0(const BlockQ8_0& b, float* y) {
  const float d = F16ToF32(b.d);
  for (int j = 0; j < kQK; ++j) y[j] = static_cast<float>(b.qs[j]) * d;
}

BlockQ4_0 EncodeQ4_0(const float* x) {
  float amax = 0.0f;
  float max = 0.0f;  // the element of largest magnitude, with its sign
  for (int j = 0; j < kQK; ++j) {
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  const float d = max / -8;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  BlockQ4_0 b;
  b.d = F32ToF16(d);
  for (int j = 0; j < kQK / 2; ++j) {
    const float x0 = x[j] * id;
    const float x1 = x[j + kQK / 2] * id;
    const int q0 = std::min(15, static_cast<int>(x0 + 8.5f));
    const int q1 = std::min(15, static_cast<int>(x1 + 8.5f));
    b.qs[j] = static_cast<uint8_t>(q0 | q1 << 4);
  }
  return b;
}

// Min and max of one block, as ggml's q4_1/q5_1 find them.
void MinMax(const float* x, float& min, float& max) {
  min = FLT_MAX;
  max = -FLT_MAX;
  for (int j = 0; j < kQK; ++j) {
    min = std::min(min, x[j]);
    max = std::max(max, x[j]);
  }
}

BlockQ4_1 EncodeQ4_1(const float* x) {
  float min, max;
  MinMax(x, min, max);
  const float d = (max - min) / 15;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  BlockQ4_1 b;
  b.d = F32ToF16(d);
  b.m = F32ToF16(min);
  for (int j = 0; j < kQK / 2; ++j) {
    const float x0 = (x[j] - min) * id;
    const float x1 = (x[j + kQK / 2] - min) * id;
    const int q0 = std::min(15, static_cast<int>(x0 + 0.5f));
    const int q1 = std::min(15, static_cast<int>(x1 + 0.5f));
    b.qs[j] = static_cast<uint8_t>(q0 | q1 << 4);
  }
  return b;
}

// Splits 32 five-bit codes into nibbles and the word of fifth bits.
void PackFiveBit(const int* codes, uint8_t* qs, uint8_t* qh) {
  uint32_t high = 0;
  for (int j = 0; j < kQK / 2; ++j) {
    const int q0 = codes[j];
    const int q1 = codes[j + kQK / 2];
    qs[j] = static_cast<uint8_t>((q0 & 0xf) | (q1 & 0xf) << 4);
    high |= static_cast<uint32_t>(q0 >> 4) << j;
    high |= static_cast<uint32_t>(q1 >> 4) << (j + kQK / 2);
  }
  for (int i = 0; i < 4; ++i) qh[i] = static_cast<uint8_t>(high >> (8 * i));
}

BlockQ5_0 EncodeQ5_0(const float* x) {
  float amax = 0.0f;
  float max = 0.0f;
  for (int j = 0; j < kQK; ++j) {
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  const float d = max / -16;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  int codes[kQK];
  for (int j = 0; j < kQK; ++j) {
    const float x0 = x[j] * id;
    codes[j] = std::min(31, static_cast<int>(x0 + 16.5f));
  }
  BlockQ5_0 b;
  b.d = F32ToF16(d);
  PackFiveBit(codes, b.qs, b.qh);
  return b;
}

BlockQ5_1 EncodeQ5_1(const float* x) {
  float min, max;
  MinMax(x, min, max);
  const float d = (max - min) / 31;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  int codes[kQK];
  for (int j = 0; j < kQK; ++j) {
    const float x0 = (x[j] - min) * id;
    codes[j] = std::min(31, static_cast<int>(x0 + 0.5f));
  }
  BlockQ5_1 b;
  b.d = F32ToF16(d);
  b.m = F32ToF16(min);
  PackFiveBit(codes, b.qs, b.qh);
  return b;
}

BlockQ8_0 EncodeQ8_0(const float* x) {
  float amax = 0.0f;
  for (int j = 0; j < kQK; ++j) amax = std::max(amax, std::fabs(x[j]));
  const float d = amax / 127;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  BlockQ8_0 b;
  b.d = F32ToF16(d);
  for (int j = 0; j < kQK; ++j) {
    const float x0 = x[j] * id;
    b.qs[j] = static_cast<int8_t>(std::round(x0));
  }
  return b;
}

// --- With importance: llama.cpp's quantize_row_*_impl (quantize_search.h). The weights scale
// each column's importance by the element's magnitude against the whole row's spread sigma2.
// Without importance ggml_quantize_chunk writes the reference blocks above.

void PackNibbles(const int8_t* codes, uint8_t* qs) {
  for (int j = 0; j < kQK / 2; ++j) {
    qs[j] = static_cast<uint8_t>(codes[j] | (codes[j + kQK / 2] << 4));
  }
}

BlockQ4_0 SearchQ4_0(const float* x, const float* weight) {
  int8_t L[kQK];
  BlockQ4_0 b;
  b.d = F32ToF16(MakeQxQuants(kQK, 8, x, L, 1, weight));
  PackNibbles(L, b.qs);
  return b;
}

BlockQ5_0 SearchQ5_0(const float* x, const float* weight) {
  int8_t L[kQK];
  BlockQ5_0 b;
  b.d = F32ToF16(MakeQxQuants(kQK, 16, x, L, 1, weight));
  int codes[kQK];
  for (int j = 0; j < kQK; ++j) codes[j] = L[j];
  PackFiveBit(codes, b.qs, b.qh);
  return b;
}

// q4_1/q5_1 store m = -min as ggml does: the search returns the min as a positive offset.
BlockQ4_1 SearchQ4_1(const float* x, const float* weight) {
  uint8_t L[kQK], Laux[kQK];
  float min;
  BlockQ4_1 b;
  b.d = F32ToF16(MakeQkx3Quants(kQK, 15, x, weight, L, &min, Laux, -0.9f, 0.05f, 36, false));
  b.m = F32ToF16(-min);
  for (int j = 0; j < kQK / 2; ++j) b.qs[j] = static_cast<uint8_t>(L[j] | (L[j + kQK / 2] << 4));
  return b;
}

BlockQ5_1 SearchQ5_1(const float* x, const float* weight) {
  uint8_t L[kQK], Laux[kQK];
  float min;
  BlockQ5_1 b;
  b.d = F32ToF16(MakeQkx3Quants(kQK, 31, x, weight, L, &min, Laux, -0.9f, 0.05f, 36, false));
  b.m = F32ToF16(-min);
  int codes[kQK];
  for (int j = 0; j < kQK; ++j) codes[j] = L[j];
  PackFiveBit(codes, b.qs, b.qh);
  return b;
}

template <typename Block, Block (*Encode)(const float*), Block (*Search)(const float*, const float*)>
void SearchRow(const float* x, void* dst, int64_t n, const float* importance) {
  if (importance == nullptr) return QuantizeBlocks<Block, kQK, Encode>(x, dst, n);
  float sum_x2 = 0;
  for (int64_t j = 0; j < n; ++j) sum_x2 += x[j] * x[j];
  const float sigma2 = sum_x2 / static_cast<float>(n);
  auto* out = static_cast<uint8_t*>(dst);
  float weight[kQK];
  for (int64_t b = 0; b < n / kQK; ++b) {
    const float* xb = x + b * kQK;
    const float* qw = importance + b * kQK;
    for (int j = 0; j < kQK; ++j) weight[j] = qw[j] * std::sqrt(sigma2 + xb[j] * xb[j]);
    const Block block = Search(xb, weight);
    std::memcpy(out + b * static_cast<int64_t>(sizeof(Block)), &block, sizeof(Block));
  }
}

// ggml has no search for q8_0: its importance is ignored.
void SearchQ8_0Row(const float* x, void* dst, int64_t n, const float* /*importance*/) {
  QuantizeBlocks<BlockQ8_0, kQK, EncodeQ8_0>(x, dst, n);
}

// The 4-bit types' nibbles: element j low, element j + 16 high.
void UnpackNibbles(const uint8_t* qs, UnpackedBlock* out) {
  for (int j = 0; j < kQK / 2; ++j) {
    out->codes[j] = qs[j] & 0xf;
    out->codes[j + kQK / 2] = qs[j] >> 4;
  }
}

void UnpackQ4_0(const void* block, UnpackedBlock* out) {
  const auto b = ReadBlock<BlockQ4_0>(block);
  out->d16 = b.d;
  UnpackNibbles(b.qs, out);
}

void UnpackQ4_1(const void* block, UnpackedBlock* out) {
  const auto b = ReadBlock<BlockQ4_1>(block);
  out->d16 = b.d;
  out->m16 = b.m;
  UnpackNibbles(b.qs, out);
}

// The 5-bit types: nibbles as the 4-bit ones, the fifth bit of element j from bit j of qh.
void UnpackFiveBits(const uint8_t (&qh_bytes)[4], const uint8_t* qs, UnpackedBlock* out) {
  UnpackNibbles(qs, out);
  const uint32_t qh = HighBits(qh_bytes);
  for (int j = 0; j < kQK; ++j) out->codes[j] |= static_cast<uint8_t>(((qh >> j) & 1) << 4);
}

void UnpackQ5_0(const void* block, UnpackedBlock* out) {
  const auto b = ReadBlock<BlockQ5_0>(block);
  out->d16 = b.d;
  UnpackFiveBits(b.qh, b.qs, out);
}

void UnpackQ5_1(const void* block, UnpackedBlock* out) {
  const auto b = ReadBlock<BlockQ5_1>(block);
  out->d16 = b.d;
  out->m16 = b.m;
  UnpackFiveBits(b.qh, b.qs, out);
}

// Signed codes biased to unsigned (zero 128).
void UnpackQ8_0(const void* block, UnpackedBlock* out) {
  const auto b = ReadBlock<BlockQ8_0>(block);
  out->d16 = b.d;
  for (int j = 0; j < kQK; ++j) out->codes[j] = static_cast<uint8_t>(b.qs[j] + 128);
}

constexpr CodeFacts Legacy(int32_t bits, int32_t zero, bool has_min) {
  return {.family = BlockFamily::kLegacy,
          .code_bits = bits,
          .zero = zero,
          .has_min = has_min,
          .sub_block = kQK};
}

constexpr DTypeRow kRows[] = {
    {.dtype = DType::kQ4_0,
     .name = "q4_0",
     .block_size = kQK,
     .block_bytes = sizeof(BlockQ4_0),
     .dequantize = DequantizeBlocks<BlockQ4_0, kQK, DecodeQ4_0>,
     .quantize = QuantizeBlocks<BlockQ4_0, kQK, EncodeQ4_0>,
     .quantize_input = QuantizeInput::kF16Range,
     .quantize_search = SearchRow<BlockQ4_0, EncodeQ4_0, SearchQ4_0>,
     .codes = Legacy(4, 8, false),
     .unpack = UnpackQ4_0,
     .file_type = 2},  // LLAMA_FTYPE_MOSTLY_Q4_0
    {.dtype = DType::kQ4_1,
     .name = "q4_1",
     .block_size = kQK,
     .block_bytes = sizeof(BlockQ4_1),
     .dequantize = DequantizeBlocks<BlockQ4_1, kQK, DecodeQ4_1>,
     .quantize = QuantizeBlocks<BlockQ4_1, kQK, EncodeQ4_1>,
     .quantize_input = QuantizeInput::kF16Range,
     .quantize_search = SearchRow<BlockQ4_1, EncodeQ4_1, SearchQ4_1>,
     .codes = Legacy(4, 0, true),
     .unpack = UnpackQ4_1,
     .file_type = 3},  // LLAMA_FTYPE_MOSTLY_Q4_1
    {.dtype = DType::kQ5_0,
     .name = "q5_0",
     .block_size = kQK,
     .block_bytes = sizeof(BlockQ5_0),
     .dequantize = DequantizeBlocks<BlockQ5_0, kQK, DecodeQ5_0>,
     .quantize = QuantizeBlocks<BlockQ5_0, kQK, EncodeQ5_0>,
     .quantize_input = QuantizeInput::kF16Range,
     .quantize_search = SearchRow<BlockQ5_0, EncodeQ5_0, SearchQ5_0>,
     .codes = Legacy(5, 16, false),
     .unpack = UnpackQ5_0},
    {.dtype = DType::kQ5_1,
     .name = "q5_1",
     .block_size = kQK,
     .block_bytes = sizeof(BlockQ5_1),
     .dequantize = DequantizeBlocks<BlockQ5_1, kQK, DecodeQ5_1>,
     .quantize = QuantizeBlocks<BlockQ5_1, kQK, EncodeQ5_1>,
     .quantize_input = QuantizeInput::kF16Range,
     .quantize_search = SearchRow<BlockQ5_1, EncodeQ5_1, SearchQ5_1>,
     .codes = Legacy(5, 0, true),
     .unpack = UnpackQ5_1},
    {.dtype = DType::kQ8_0,
     .name = "q8_0",
     .block_size = kQK,
     .block_bytes = sizeof(BlockQ8_0),
     .dequantize = DequantizeBlocks<BlockQ8_0, kQK, DecodeQ8_0>,
     .quantize = QuantizeBlocks<BlockQ8_0, kQK, EncodeQ8_0>,
     .quantize_input = QuantizeInput::kF16Range,
     .quantize_search = SearchQ8_0Row,
     .codes = Legacy(8, 128, false),
     .unpack = UnpackQ8_0,
     .file_type = 7},  // LLAMA_FTYPE_MOSTLY_Q8_0
    {.dtype = DType::kQ8_1, .name = "q8_1", .block_size = kQK, .block_bytes = 36},
};

}  // namespace

std::span<const DTypeRow> LegacyQuantRows() { return kRows; }

}  // namespace kite::internal
