// QuantEncoding: how the integers of a quantized value map to the real numbers they stand for,
// as an integer-only accelerator (Qualcomm's HTP is the model) needs it stated per value:
//
//   real = scale · (q + offset)        (QNN's convention: offset = -zero_point)
//
// with q a `bits`-wide integer, signed or unsigned, and (scale, offset) chosen at one of four
// granularities:
//   kPerTensor  one scale and offset for the whole value (activations: static, calibrated).
//   kPerAxis    one per index of `axis` (weights: per output channel).
//   kPerBlock   one per block of `block_size` elements along `block_axis`, for every index of
//               the other dims: the scales form the value's shape with dim `block_axis` divided
//               by `block_size`, row-major.
//   kLpbq       two levels (QNN's low-power blockwise quantization): a float scale per index of
//               `axis` times a small unsigned integer `multipliers` per block (laid out as for
//               kPerBlock, each in 1 .. 2^multiplier_bits - 1), so the hardware applies the
//               block scales in integer arithmetic and the float once per channel. Offsets are
//               per channel.
// Offsets may be left empty: all zero (symmetric). A value's encoding is checked against its
// shape and storage dtype by ValidateEncoding, whose error names the field that is wrong.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "tensor/dtype.h"

namespace kite {

enum class EncodingGranularity : uint8_t { kPerTensor, kPerAxis, kPerBlock, kLpbq };

struct QuantEncoding {
  int32_t bits = 8;  // 4, 8 or 16
  bool is_signed = false;
  EncodingGranularity granularity = EncodingGranularity::kPerTensor;
  int32_t axis = 0;                  // kPerAxis, kLpbq: the channel dim
  int32_t block_axis = 0;            // kPerBlock, kLpbq: the dim blocks run along
  int64_t block_size = 0;            // kPerBlock, kLpbq: elements per block; divides that dim
  int32_t multiplier_bits = 4;       // kLpbq: width of the per-block integer multipliers (1..8)
  std::vector<float> scales;         // > 0 and finite; count: see ScaleCount
  std::vector<int32_t> offsets;      // empty (all 0) or one per scale (kLpbq: per channel)
  std::vector<uint8_t> multipliers;  // kLpbq only: one per block

  // Integer range of q: [0, 2^bits - 1] unsigned, [-2^(bits-1), 2^(bits-1) - 1] signed.
  int32_t q_min() const;
  int32_t q_max() const;
  bool operator==(const QuantEncoding&) const = default;
};

// The integer dtype that holds q of `encoding`: i4, u4 (Kite's packed 4-bit codes, two a byte;
// tensor/int_codes.h), i8, u8, i16, u16.
DType StorageDType(const QuantEncoding& encoding);

// "u8 per-axis(0) [64 scales]", for messages and graph dumps.
std::string EncodingString(const QuantEncoding& encoding);

// How many float scales `encoding` needs on a value of `shape`: 1, shape[axis], the number of
// blocks, or (kLpbq) shape[axis]. Call after ValidateEncoding.
int64_t ScaleCount(const QuantEncoding& encoding, std::span<const int64_t> shape);

// InvalidInput naming what is wrong: the bit width, an axis outside the shape, a block size that
// does not divide its dim, a scale or multiplier count that disagrees with the shape, a scale
// that is not finite and > 0, an offset that puts real 0 outside q's range, a multiplier outside
// 1 .. 2^multiplier_bits - 1, or a storage `dtype` other than StorageDType (4-bit values are
// packed two a byte, as i4/u4).
Status ValidateEncoding(const QuantEncoding& encoding, std::span<const int64_t> shape, DType dtype);

// The scale and offset of the element at row-major `index` of a value of `shape` (validated).
struct ScaleOffset {
  float scale = 1.0f;
  int32_t offset = 0;
};
ScaleOffset ScaleOffsetAt(const QuantEncoding& encoding, std::span<const int64_t> shape,
                          int64_t index);

}  // namespace kite
