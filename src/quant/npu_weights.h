// NPU-style weight layouts: a weight W [N, K] (N output channels, K inputs) quantized to integer
// codes under a QuantEncoding (graph/encoding.h), the form an integer accelerator (Qualcomm's
// HTP) runs and QNN / AIMET describe:
//   int8, int8-asym          8-bit codes, one scale (and offset) per output channel
//   int4, int4-asym          4-bit codes, one scale (and offset) per output channel
//   int4-g32/g64/g128[-asym] 4-bit codes, one scale (and offset) per group of K
//   lpbq16/lpbq32/lpbq64     4-bit signed codes, a float scale per channel times an unsigned
//                            4-bit multiplier (1..15) per block of K (QNN's LPBQ)
// Symmetric layouts have signed codes and no offsets; asymmetric ones unsigned codes with an
// offset per scale (real = scale · (q + offset)). 4-bit codes are packed two a byte (i4/u4).
//
// The arithmetic, per channel (row of W) or per block of a row (the "range" r):
//   symmetric   scale = max|r| / q_max (7 or 127) rounded up to 11 significant bits (an exact
//               f16: the cpu backend then runs it on q4_0's / q8_0's kernel and bytes);
//               q = clamp(round(w / scale), q_min, q_max)
//   asymmetric  lo = min(min r, 0), hi = max(max r, 0) (real 0 stays exact);
//               scale = (hi - lo) / q_max (15 or 255; hi - lo in double, which cannot
//               overflow); offset = round(lo / scale);
//               q = clamp(round(w / scale) - offset, 0, q_max)
//   lpbq        block scales s_b as symmetric 4-bit; channel scale c = max_b s_b / 15 rounded
//               up to 7 significant bits (so that every block scale c · m_b, 11 bits at most,
//               is exactly an f16: the cpu backend then runs LPBQ on q4_0's kernel, and f16
//               hardware takes it without loss); multiplier m_b = clamp(round(s_b / c), 1, 15);
//               codes against c · m_b
// with round to nearest, ties to even. A range of zeros gets scale 1 (its codes are 0: any
// positive scale is exact). The optional clip search tries shrinking each channel's range by
// ratios 1, 0.95, ... 0.5 (all the channel's blocks by the same ratio) and keeps the ratio with
// the least squared error, weighted per column by the importance when one is given (llama.cpp's
// importance matrix: the mean x² per input column); without it the importance is not used.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "base/status.h"
#include "graph/encoding.h"
#include "quant/quantized_tensor.h"

namespace kite {

// One entry of the `--type` name table.
struct NpuWeightType {
  std::string_view name;  // "int4-g32-asym"
  int32_t bits = 8;       // 4 or 8
  bool asymmetric = false;
  EncodingGranularity granularity = EncodingGranularity::kPerAxis;  // or kPerBlock, kLpbq
  int64_t block = 0;      // kPerBlock, kLpbq: elements of K per block
};

// Every NPU layout name, in the order above.
std::span<const NpuWeightType> NpuWeightTypes();
// The entry named `name` (exactly, lower case), or nullptr.
const NpuWeightType* FindNpuWeightType(std::string_view name);
// "int8, int8-asym, ..." for error messages and --help.
std::string NpuWeightTypeNames();

struct NpuQuantizeOptions {
  bool clip_search = false;  // per-channel MSE clip search (see above); RTN without it
};

// Quantizes `data` (row-major, shape [N, K]) to the layout named `type`. `importance`: empty or
// K non-negative weights per column. Errors name the tensor: an unknown type, a shape the
// layout cannot take (not 2-D, K not a multiple of the block, odd K for 4-bit), a data or
// importance size that disagrees with the shape, a NaN or infinite element (with its index).
Result<QuantizedTensor> QuantizeNpuWeight(std::string_view name, std::string_view type,
                                          std::span<const float> data,
                                          std::span<const int64_t> shape,
                                          std::span<const float> importance = {},
                                          const NpuQuantizeOptions& options = {});

}  // namespace kite
