// ggml's quantized block layouts (ggml-common.h), byte for byte, so GGUF tensor data can be read
// and written as it stands. Halves (d, dmin, m) are IEEE F16 bit patterns (base/half.h).
// Formulas, with q the unsigned code stored in the block:
//   q4_0  y = d*(q - 8)                    q4_1  y = d*q + m
//   q5_0  y = d*(q - 16)                   q5_1  y = d*q + m
//   q8_0  y = d*q (q signed)               q8_K  y = d*q (q signed, d an F32)
//   q2_K  y = d*sc*q - dmin*m   (16 sub-blocks of 16, 4-bit sc and m)
//   q4_K, q5_K  y = d*sc*q - dmin*m   (8 sub-blocks of 32, 6-bit sc and m packed in 12 bytes)
//   q3_K  y = d*sc*(q - 4)      (16 sub-blocks of 16, signed 6-bit sc, stored as sc + 32)
//   q6_K  y = d*sc*(q - 32)     (16 sub-blocks of 16, int8 sc)
//   iq4_nl  y = d*kIQ4Levels[q]   iq4_xs  y = d*(ls - 32)*kIQ4Levels[q] (8 sub-blocks of 32)
#pragma once

#include <bit>
#include <cstdint>

namespace kite {

inline constexpr int kQK = 32;    // elements per block of the legacy types (q4_0 … q8_0)
inline constexpr int kQKK = 256;  // elements per super-block of the k-quants (ggml's QK_K)

struct BlockQ4_0 {
  uint16_t d;
  uint8_t qs[kQK / 2];  // element j in the low nibble of qs[j], element j+16 in the high one
};

struct BlockQ4_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qs[kQK / 2];
};

struct BlockQ5_0 {
  uint16_t d;
  uint8_t qh[4];  // bit j (little-endian 32-bit word) is the fifth bit of element j
  uint8_t qs[kQK / 2];
};

struct BlockQ5_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qh[4];
  uint8_t qs[kQK / 2];
};

struct BlockQ8_0 {
  uint16_t d;
  int8_t qs[kQK];
};

// 2-bit codes, 4 per byte: element e sits in qs[32*(e/128) + e%32] at bit 2*((e%128)/32).
// q3_K shares this placement for its low two bits.
struct BlockQ2_K {
  uint8_t scales[kQKK / 16];  // low nibble sc, high nibble m, one byte per sub-block of 16
  uint8_t qs[kQKK / 4];
  uint16_t d;
  uint16_t dmin;
};

struct BlockQ3_K {
  uint8_t hmask[kQKK / 8];  // bit e/32 of hmask[e%32]: the third bit of element e's code
  uint8_t qs[kQKK / 4];     // low two bits, placed as in q2_K
  uint8_t scales[12];       // 16 six-bit scales, see UnpackQ3KScale
  uint16_t d;
};

// 4-bit codes: element e sits in qs[32*(e/64) + e%32], low nibble when e%64 < 32.
struct BlockQ4_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[12];  // 8 six-bit scales and 8 six-bit mins, see UnpackScaleMinK4
  uint8_t qs[kQKK / 2];
};

struct BlockQ5_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[12];
  uint8_t qh[kQKK / 8];  // bit e/32 of qh[e%32]: the fifth bit of element e's code
  uint8_t qs[kQKK / 2];  // low four bits, placed as in q4_K
};

// Element e = 128*h + 32*k + l (h < 2, k < 4, l < 32): low nibble of ql[64*h + 32*(k%2) + l]
// (high nibble when k >= 2), top two bits at bit 2*k of qh[32*h + l].
struct BlockQ6_K {
  uint8_t ql[kQKK / 2];
  uint8_t qh[kQKK / 4];
  int8_t scales[kQKK / 16];
  uint16_t d;
};

struct BlockQ8_K {
  float d;
  int8_t qs[kQKK];
  int16_t bsums[kQKK / 16];  // sum of the codes of each group of 16 (used by ggml's dot products)
};

// The 16 levels of ggml's non-linear 4-bit types (kvalues_iq4nl): a code q stands for
// d·kIQ4Levels[q].
inline constexpr int8_t kIQ4Levels[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                          1,    13,   25,  38,  53,  69,  89,  113};

// iq4_nl: y = d·kIQ4Levels[q], nibbles placed as in q4_0.
struct BlockIQ4_NL {
  uint16_t d;
  uint8_t qs[kQK / 2];
};

// iq4_xs: 8 sub-blocks of 32 as iq4_nl under d·(ls - 32), ls a 6-bit scale: low nibble of
// scales_l[j/2] (high nibble for odd j), top two bits at bit 2j of scales_h.
struct BlockIQ4_XS {
  uint16_t d;
  uint16_t scales_h;
  uint8_t scales_l[kQKK / 64];
  uint8_t qs[kQKK / 2];  // sub-block j: bytes 16j..16j+15, element 32j+i low, 32j+16+i high
};

// Multi-byte fields are read in place, and GGUF stores them little-endian.
static_assert(std::endian::native == std::endian::little);

// Sizes must agree with ggml (the rows in tensor/types/ take their block bytes from these).
static_assert(sizeof(BlockQ4_0) == 18);
static_assert(sizeof(BlockQ4_1) == 20);
static_assert(sizeof(BlockQ5_0) == 22);
static_assert(sizeof(BlockQ5_1) == 24);
static_assert(sizeof(BlockQ8_0) == 34);
static_assert(sizeof(BlockQ2_K) == 84);
static_assert(sizeof(BlockQ3_K) == 110);
static_assert(sizeof(BlockQ4_K) == 144);
static_assert(sizeof(BlockQ5_K) == 176);
static_assert(sizeof(BlockQ6_K) == 210);
static_assert(sizeof(BlockQ8_K) == 292);
static_assert(sizeof(BlockIQ4_NL) == 18);
static_assert(sizeof(BlockIQ4_XS) == 136);

struct ScaleMin {
  uint8_t scale;
  uint8_t min;
};

// q4_K/q5_K: the 6-bit scale and min of sub-block j (0..7). Sub-blocks 0..3 use the low six bits
// of bytes j (scale) and j+4 (min); sub-blocks 4..7 have their low four bits in byte j+4 (scale in
// the low nibble, min in the high one) and their top two bits in the spare top bits of bytes j-4
// (scale) and j (min).
inline ScaleMin UnpackScaleMinK4(const uint8_t* packed, int j) {
  if (j < 4)
    return {static_cast<uint8_t>(packed[j] & 63), static_cast<uint8_t>(packed[j + 4] & 63)};
  return {static_cast<uint8_t>((packed[j + 4] & 0xf) | ((packed[j - 4] >> 6) << 4)),
          static_cast<uint8_t>((packed[j + 4] >> 4) | ((packed[j] >> 6) << 4))};
}

// Inverse of UnpackScaleMinK4 for all 8 sub-blocks; scale and min must be < 64.
inline void PackScaleMinK4(const uint8_t* scale, const uint8_t* min, uint8_t* packed) {
  for (int j = 0; j < 4; ++j) {
    packed[j] = static_cast<uint8_t>(scale[j] | (scale[j + 4] >> 4) << 6);
    packed[j + 4] = static_cast<uint8_t>(min[j] | (min[j + 4] >> 4) << 6);
    packed[j + 8] = static_cast<uint8_t>((scale[j + 4] & 0xf) | (min[j + 4] & 0xf) << 4);
  }
}

// q3_K: the signed scale (-32..31) of sub-block j (0..15). Its low four bits are a nibble of byte
// j%8 (low nibble for j < 8), its top two bits sit at bit 2*(j/4) of byte 8 + j%4.
inline int UnpackQ3KScale(const uint8_t* packed, int j) {
  const int low = j < 8 ? packed[j] & 0xf : packed[j - 8] >> 4;
  const int high = (packed[8 + j % 4] >> (2 * (j / 4))) & 3;
  return (low | high << 4) - 32;
}

// Inverse of UnpackQ3KScale for all 16 sub-blocks; scales must lie in -32..31.
inline void PackQ3KScales(const int8_t* scales, uint8_t* packed) {
  for (int i = 0; i < 12; ++i) packed[i] = 0;
  for (int j = 0; j < 16; ++j) {
    const int biased = scales[j] + 32;
    packed[j % 8] |= static_cast<uint8_t>((biased & 0xf) << (j < 8 ? 0 : 4));
    packed[8 + j % 4] |= static_cast<uint8_t>((biased >> 4) << (2 * (j / 4)));
  }
}

}  // namespace kite
