// WeightGrid: the target quantizer as the quantization algorithms (GPTQ, AWQ, SeqMSE, ...) see
// it. Each algorithm only needs to fake-quantize (quantize, then dequantize) weights, so one
// algorithm serves the ggml types and the NPU layouts alike. A grid cuts a row [in] into groups
// of group_size() columns (0: the whole row, per output channel), each with its own scale and
// offset, and rounds every value to
//
//   value(code) = offset + scale · level(code)      (level(code) = code for the integer grids)
//
// GPTQ needs the two steps apart: fix a group's scale from the values it holds when the group
// starts (Fit), then round each column with it as the error feedback changes the later columns
// (Code / Value). AWQ and SeqMSE search a clip ratio: Fit shrinks the range it covers by it.
//
// The grids here are small models of the real formats: the exact bytes are written by the
// ggml quantizers (tensor/quantize.h QuantizeRows) and the NPU quantizers (quant/npu_weights.h),
// which re-quantize the algorithms' output; values already on the grid come back unchanged up
// to the format's own scale search (the scale of a block is refit from values on it).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace kite {

// One group's parameters: value(code) = offset + scale · level(code).
struct GroupScale {
  float scale = 0.0f;
  float offset = 0.0f;
};

class WeightGrid {
 public:
  virtual ~WeightGrid() = default;
  virtual std::string_view name() const = 0;
  // Columns per group (0: the whole row is one group).
  virtual int64_t group_size() const = 0;
  // The parameters of a group holding `values`, covering their range shrunk by `clip` (0, 1].
  virtual GroupScale Fit(std::span<const float> values, float clip) const = 0;
  // The code of the grid value nearest to x under `g`, and the value of a code.
  virtual int32_t Code(const GroupScale& g, float x) const = 0;
  virtual float Value(const GroupScale& g, int32_t code) const = 0;
  // The codes the grid has, [min_code(), max_code()].
  virtual int32_t min_code() const = 0;
  virtual int32_t max_code() const = 0;

  // x clamped to the range `g` covers (a clipped weight that a format's own round-to-nearest,
  // refitting its scales, quantizes to the values this grid gives with `g`).
  float Clamp(const GroupScale& g, float x) const;

  // Columns per group for a row of `columns` (group_size(), or the whole row).
  int64_t GroupColumns(int64_t columns) const { return group_size() > 0 ? group_size() : columns; }
  // Whether a row of `columns` splits into whole groups (an error naming the grid if not).
  Status CheckColumns(int64_t columns) const;
  // Fake-quantizes `row` in place, every group fitted with `clip` (RTN when clip = 1): the
  // same values as Fit, Code and Value (a grid may override it with a faster loop).
  virtual void QuantizeRow(std::span<float> row, float clip = 1.0f) const;
};

// Uniform integer grids: `bits` bits, symmetric (codes -(2^(b-1)-1) .. 2^(b-1)-1, scale =
// max|x| / (2^(b-1)-1), offset 0: the NPU symmetric layouts; the restricted range, so that
// values on the grid fake-quantize to themselves again), asymmetric (codes 0 .. 2^b-1,
// the range [min, max] with 0 inside it on an integer zero point: the NPU asymmetric layouts)
// or ggml-style (q4_0 / q8_0: scale = -max/2^(b-1) with max the value of largest magnitude,
// f16 scale; q4_1 / q4_K-like: codes 0 .. 2^b-1 over [min, max], no zero point).
enum class IntGridKind { kSymmetric, kAsymmetric, kSignedMax, kMinMax };

struct IntGridSpec {
  IntGridKind kind = IntGridKind::kSymmetric;
  int32_t bits = 4;        // 2..8
  int64_t group_size = 0;  // 0: per output channel
  bool f16_scale = false;  // the scale (and offset) are stored as f16 (ggml types)
};

Result<std::unique_ptr<WeightGrid>> MakeIntGrid(const IntGridSpec& spec);

// A grid by name, for the command line and tests: "int8", "int4" (per channel, symmetric),
// "int8_asym", "int4_asym", "int4_g32" / "_g64" / "_g128" (group-wise symmetric, "_asym"
// suffix for asymmetric), "q4_0", "q8_0", "q4_1", "q5_0", "q5_1" (the formats' values exactly),
// and models of the k-quants' sub-blocks with float scales (their super-block scale
// quantization is left to the format's own quantizer): "q2_k", "q4_k", "q5_k" (min/max per 16
// or 32), "q3_k", "q6_k" (signed max per 16); "iq4_nl" / "iq4_xs" as q4_0's uniform grid (the
// real one is non-uniform). An unknown name is an error listing the known ones (lower case:
// ggml's DTypeName lower-cased).
Result<std::unique_ptr<WeightGrid>> MakeWeightGrid(std::string_view name);

// What every algorithm checks of its input weight [out, in]: the size and that every value is
// finite (an error names the weight and the first bad position).
Status CheckWeight(std::string_view name, std::span<const float> weight, int64_t out, int64_t in);

}  // namespace kite
