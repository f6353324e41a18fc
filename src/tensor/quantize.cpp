#include "tensor/quantize.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <string>

#include "base/half.h"
#include "tensor/quant_blocks.h"
#include "tensor/quantize_k.h"

namespace kite {

namespace {

constexpr float kF16Max = 65504.0f;

// The legacy quantizers below repeat ggml's quantize_row_*_ref arithmetic step for step (the
// scale from the unrounded max, codes from 1/d, truncation after adding 0.5 or 8.5, roundf for
// q8_0), so the bytes match the files llama.cpp writes.

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

template <typename Block, typename Encode>
void EncodeBlocks(const float* src, void* dst, int64_t blocks, int block_size, Encode encode) {
  auto* bytes = static_cast<uint8_t*>(dst);
  for (int64_t i = 0; i < blocks; ++i) {
    const Block block = encode(src + i * block_size);
    std::memcpy(bytes + i * static_cast<int64_t>(sizeof(Block)), &block, sizeof(Block));
  }
}

void EncodeF16(const float* src, void* dst, int64_t n) {
  auto* bytes = static_cast<uint8_t*>(dst);
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t h = F32ToF16(src[i]);
    std::memcpy(bytes + 2 * i, &h, 2);
  }
}

void EncodeBf16(const float* src, void* dst, int64_t n) {
  auto* bytes = static_cast<uint8_t*>(dst);
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t b = F32ToBf16(src[i]);
    std::memcpy(bytes + 2 * i, &b, 2);
  }
}

// Block quantizers cast scaled values to integers (undefined for NaN and infinity) and store
// their scales as F16, so their input is checked once up front.
Status CheckQuantizable(DType dtype, const float* src, int64_t n) {
  const bool f16_scales = dtype != DType::kQ8_K;
  for (int64_t i = 0; i < n; ++i) {
    if (!std::isfinite(src[i]) || (f16_scales && std::fabs(src[i]) > kF16Max)) {
      return InvalidInput("quantize " + std::string(DTypeName(dtype)) + ": element " +
                          std::to_string(i) + " is " + std::to_string(src[i]) +
                          (f16_scales ? ", expected a finite value within the f16 range ±65504"
                                      : ", expected a finite value"));
    }
  }
  return Ok();
}

}  // namespace

Status Quantize(DType dtype, const float* src, void* dst, int64_t n) {
  const auto traits = LookupDType(static_cast<uint32_t>(dtype));
  if (!traits || !traits->can_dequantize) {
    return Unsupported("quantize: " +
                       (traits ? std::string(traits->name)
                               : "type id " + std::to_string(static_cast<uint32_t>(dtype))) +
                       " is not a type Kite can write");
  }
  if (n < 0 || n % traits->block_size != 0) {
    return InvalidInput("quantize: " + std::to_string(n) + " " + std::string(traits->name) +
                        " elements is not a whole number of blocks of " +
                        std::to_string(traits->block_size));
  }
  if (n > 0 && (src == nullptr || dst == nullptr)) {
    return InvalidInput("quantize: null buffer for " + std::to_string(n) + " elements");
  }
  if (traits->block_size > 1) KITE_RETURN_IF_ERROR(CheckQuantizable(dtype, src, n));
  const int64_t blocks = n / traits->block_size;
  switch (dtype) {
    case DType::kF32:
      std::memmove(dst, src, static_cast<size_t>(n) * sizeof(float));
      break;
    case DType::kF16:
      EncodeF16(src, dst, n);
      break;
    case DType::kBF16:
      EncodeBf16(src, dst, n);
      break;
    case DType::kQ4_0:
      EncodeBlocks<BlockQ4_0>(src, dst, blocks, kQK, EncodeQ4_0);
      break;
    case DType::kQ4_1:
      EncodeBlocks<BlockQ4_1>(src, dst, blocks, kQK, EncodeQ4_1);
      break;
    case DType::kQ5_0:
      EncodeBlocks<BlockQ5_0>(src, dst, blocks, kQK, EncodeQ5_0);
      break;
    case DType::kQ5_1:
      EncodeBlocks<BlockQ5_1>(src, dst, blocks, kQK, EncodeQ5_1);
      break;
    case DType::kQ8_0:
      EncodeBlocks<BlockQ8_0>(src, dst, blocks, kQK, EncodeQ8_0);
      break;
    case DType::kQ8_K:
      EncodeBlocks<BlockQ8_K>(src, dst, blocks, kQKK, EncodeQ8_K);
      break;
    case DType::kQ2_K:
      EncodeBlocks<BlockQ2_K>(src, dst, blocks, kQKK, internal::QuantizeQ2_KBlock);
      break;
    case DType::kQ3_K:
      EncodeBlocks<BlockQ3_K>(src, dst, blocks, kQKK, internal::QuantizeQ3_KBlock);
      break;
    case DType::kQ4_K:
      EncodeBlocks<BlockQ4_K>(src, dst, blocks, kQKK, internal::QuantizeQ4_KBlock);
      break;
    case DType::kQ5_K:
      EncodeBlocks<BlockQ5_K>(src, dst, blocks, kQKK, internal::QuantizeQ5_KBlock);
      break;
    case DType::kQ6_K:
      EncodeBlocks<BlockQ6_K>(src, dst, blocks, kQKK, internal::QuantizeQ6_KBlock);
      break;
    default:
      return Internal("quantize: " + std::string(traits->name) +
                      " is marked convertible in dtype.cpp but has no encoder");
  }
  return Ok();
}

}  // namespace kite
