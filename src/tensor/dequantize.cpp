#include "tensor/dequantize.h"

#include <cstring>
#include <string>

#include "base/half.h"
#include "tensor/quant_blocks.h"

namespace kite {

namespace {

// Blocks are copied out before decoding because GGUF data is only as aligned as the file
// makes it; the copy is cheap next to the decode.
template <typename Block, typename Decode>
void DecodeBlocks(const void* src, float* dst, int64_t blocks, int block_size, Decode decode) {
  const auto* bytes = static_cast<const uint8_t*>(src);
  Block block;
  for (int64_t i = 0; i < blocks; ++i) {
    std::memcpy(&block, bytes + i * static_cast<int64_t>(sizeof(Block)), sizeof(Block));
    decode(block, dst + i * block_size);
  }
}

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

void DecodeF16(const void* src, float* dst, int64_t n) {
  const auto* bytes = static_cast<const uint8_t*>(src);
  for (int64_t i = 0; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, bytes + 2 * i, 2);
    dst[i] = F16ToF32(h);
  }
}

void DecodeBf16(const void* src, float* dst, int64_t n) {
  const auto* bytes = static_cast<const uint8_t*>(src);
  for (int64_t i = 0; i < n; ++i) {
    uint16_t b;
    std::memcpy(&b, bytes + 2 * i, 2);
    dst[i] = Bf16ToF32(b);
  }
}

std::string TypeName(DType dtype) {
  const auto traits = LookupDType(static_cast<uint32_t>(dtype));
  return traits ? std::string(traits->name)
                : "type id " + std::to_string(static_cast<uint32_t>(dtype));
}

}  // namespace

Status Dequantize(DType dtype, const void* src, float* dst, int64_t n) {
  const auto traits = LookupDType(static_cast<uint32_t>(dtype));
  if (!traits || !traits->can_dequantize) {
    return Unsupported("dequantize: " + TypeName(dtype) + " cannot be converted to f32");
  }
  if (n < 0 || n % traits->block_size != 0) {
    return InvalidInput("dequantize: " + std::to_string(n) + " " + std::string(traits->name) +
                        " elements is not a whole number of blocks of " +
                        std::to_string(traits->block_size));
  }
  if (n > 0 && (src == nullptr || dst == nullptr)) {
    return InvalidInput("dequantize: null buffer for " + std::to_string(n) + " elements");
  }
  const int64_t blocks = n / traits->block_size;
  switch (dtype) {
    case DType::kF32:
      std::memmove(dst, src, static_cast<size_t>(n) * sizeof(float));
      break;
    case DType::kF16:
      DecodeF16(src, dst, n);
      break;
    case DType::kBF16:
      DecodeBf16(src, dst, n);
      break;
    case DType::kQ4_0:
      DecodeBlocks<BlockQ4_0>(src, dst, blocks, kQK, DecodeQ4_0);
      break;
    case DType::kQ4_1:
      DecodeBlocks<BlockQ4_1>(src, dst, blocks, kQK, DecodeQ4_1);
      break;
    case DType::kQ5_0:
      DecodeBlocks<BlockQ5_0>(src, dst, blocks, kQK, DecodeQ5_0);
      break;
    case DType::kQ5_1:
      DecodeBlocks<BlockQ5_1>(src, dst, blocks, kQK, DecodeQ5_1);
      break;
    case DType::kQ8_0:
      DecodeBlocks<BlockQ8_0>(src, dst, blocks, kQK, DecodeQ8_0);
      break;
    case DType::kQ2_K:
      DecodeBlocks<BlockQ2_K>(src, dst, blocks, kQKK, DecodeQ2_K);
      break;
    case DType::kQ3_K:
      DecodeBlocks<BlockQ3_K>(src, dst, blocks, kQKK, DecodeQ3_K);
      break;
    case DType::kQ4_K:
      DecodeBlocks<BlockQ4_K>(src, dst, blocks, kQKK, DecodeQ4_K);
      break;
    case DType::kQ5_K:
      DecodeBlocks<BlockQ5_K>(src, dst, blocks, kQKK, DecodeQ5_K);
      break;
    case DType::kQ6_K:
      DecodeBlocks<BlockQ6_K>(src, dst, blocks, kQKK, DecodeQ6_K);
      break;
    case DType::kQ8_K:
      DecodeBlocks<BlockQ8_K>(src, dst, blocks, kQKK, DecodeQ8_K);
      break;
    default:
      return Internal("dequantize: " + TypeName(dtype) +
                      " is marked convertible in dtype.cpp but has no decoder");
  }
  return Ok();
}

}  // namespace kite
