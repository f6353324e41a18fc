#include "quant/npu_weights.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "tensor/int_codes.h"
#include "tensor/tensor.h"

namespace kite {

namespace {

using G = EncodingGranularity;

constexpr NpuWeightType kTypes[] = {
    {"int8", 8, false, G::kPerAxis, 0},
    {"int8-asym", 8, true, G::kPerAxis, 0},
    {"int4", 4, false, G::kPerAxis, 0},
    {"int4-asym", 4, true, G::kPerAxis, 0},
    {"int4-g32", 4, false, G::kPerBlock, 32},
    {"int4-g32-asym", 4, true, G::kPerBlock, 32},
    {"int4-g64", 4, false, G::kPerBlock, 64},
    {"int4-g64-asym", 4, true, G::kPerBlock, 64},
    {"int4-g128", 4, false, G::kPerBlock, 128},
    {"int4-g128-asym", 4, true, G::kPerBlock, 128},
    {"lpbq16", 4, false, G::kLpbq, 16},
    {"lpbq32", 4, false, G::kLpbq, 32},
    {"lpbq64", 4, false, G::kLpbq, 64},
};

constexpr int32_t kLpbqMultiplierBits = 4;
constexpr int32_t kLpbqMaxMultiplier = (1 << kLpbqMultiplierBits) - 1;
// Significant bits of an f16 (10 stored, 1 implied): a symmetric scale keeps that many, so it
// is exactly an f16 (in f16's normal range).
constexpr int kF16SignificantBits = 11;
// Significant bits kept of an LPBQ channel scale: with a 4-bit multiplier, every block scale
// then has at most 11, so it is exactly an f16 too.
constexpr int kLpbqChannelScaleBits = 7;

// x > 0 rounded up to `bits` significant bits (never down: the block scales it makes cover
// their blocks' ranges, so no code clips for it).
float RoundUpToSignificantBits(float x, int bits) {
  if (!(x > 0.0f) || !std::isfinite(x)) return x;
  int exponent = 0;
  const float mantissa = std::frexp(x, &exponent);  // in [0.5, 1)
  const float steps = std::ldexp(1.0f, bits);
  return std::ldexp(std::ceil(mantissa * steps) / steps, exponent);
}
// The clip search's ratios: 1, 0.95, ..., 0.5.
constexpr int kClipSteps = 11;
constexpr float kClipStep = 0.05f;

// The integer range of a layout's codes.
struct CodeRange {
  int32_t min;
  int32_t max;
};
CodeRange RangeOf(const NpuWeightType& t) {
  if (t.asymmetric) return {0, (1 << t.bits) - 1};
  return {-(1 << (t.bits - 1)), (1 << (t.bits - 1)) - 1};
}

struct ScaleAndOffset {
  float scale = 1.0f;
  int32_t offset = 0;
};

float AbsMax(const float* w, int64_t n) {
  float m = 0.0f;
  for (int64_t i = 0; i < n; ++i) m = std::max(m, std::fabs(w[i]));
  return m;
}

// The scale (and offset) of one range of `n` weights, its extent shrunk by `ratio`.
ScaleAndOffset ChooseScale(const float* w, int64_t n, const NpuWeightType& t, CodeRange r,
                           float ratio) {
  if (!t.asymmetric) {
    const float amax = AbsMax(w, n) * ratio;
    if (!(amax > 0.0f)) return {1.0f, 0};
    return {RoundUpToSignificantBits(amax / static_cast<float>(r.max), kF16SignificantBits), 0};
  }
  float lo = 0.0f;
  float hi = 0.0f;
  for (int64_t i = 0; i < n; ++i) {
    lo = std::min(lo, w[i]);
    hi = std::max(hi, w[i]);
  }
  // In double: hi - lo of two huge finite floats overflows float.
  const auto scale =
      static_cast<float>((static_cast<double>(hi) - lo) * ratio / static_cast<double>(r.max));
  if (!(scale > 0.0f)) return {1.0f, 0};
  const float offset = std::clamp(std::nearbyint(lo * ratio / scale), static_cast<float>(-r.max),
                                  0.0f);
  return {scale, static_cast<int32_t>(offset)};
}

// q = clamp(round(w / scale) - offset, min, max), clamped as a float (w / scale may be huge).
int32_t Code(float w, ScaleAndOffset s, CodeRange r) {
  const float q = std::nearbyint(w / s.scale) - static_cast<float>(s.offset);
  return static_cast<int32_t>(
      std::clamp(q, static_cast<float>(r.min), static_cast<float>(r.max)));
}

// One channel quantized: its codes and the encoding's entries for it.
struct Channel {
  std::vector<int32_t> codes;          // [K]
  std::vector<ScaleAndOffset> scales;  // per-axis: 1; per-block: one per block; lpbq: 1
  std::vector<uint8_t> multipliers;    // lpbq: one per block
};

void QuantizeChannel(const float* w, int64_t k, const NpuWeightType& t, CodeRange r, float ratio,
                     Channel* out) {
  out->codes.resize(k);
  out->scales.clear();
  out->multipliers.clear();
  if (t.granularity == G::kPerAxis) {
    const ScaleAndOffset s = ChooseScale(w, k, t, r, ratio);
    out->scales.push_back(s);
    for (int64_t i = 0; i < k; ++i) out->codes[i] = Code(w[i], s, r);
    return;
  }
  const int64_t blocks = k / t.block;
  if (t.granularity == G::kPerBlock) {
    for (int64_t b = 0; b < blocks; ++b) {
      const float* wb = w + b * t.block;
      const ScaleAndOffset s = ChooseScale(wb, t.block, t, r, ratio);
      out->scales.push_back(s);
      for (int64_t i = 0; i < t.block; ++i) out->codes[b * t.block + i] = Code(wb[i], s, r);
    }
    return;
  }
  // LPBQ: symmetric block scales (0 for a block of zeros), then the channel's float scale and
  // the integer multipliers; the codes are taken against the block scale the multiplier realizes.
  std::vector<float> block_scales(blocks);
  float max_scale = 0.0f;
  for (int64_t b = 0; b < blocks; ++b) {
    block_scales[b] = AbsMax(w + b * t.block, t.block) * ratio / static_cast<float>(r.max);
    max_scale = std::max(max_scale, block_scales[b]);
  }
  float channel = RoundUpToSignificantBits(max_scale / static_cast<float>(kLpbqMaxMultiplier),
                                           kLpbqChannelScaleBits);
  if (!(channel > 0.0f)) channel = 1.0f;
  out->scales.push_back({channel, 0});
  for (int64_t b = 0; b < blocks; ++b) {
    const float m = std::clamp(std::nearbyint(block_scales[b] / channel), 1.0f,
                               static_cast<float>(kLpbqMaxMultiplier));
    out->multipliers.push_back(static_cast<uint8_t>(m));
    const ScaleAndOffset s{channel * m, 0};
    for (int64_t i = 0; i < t.block; ++i) {
      out->codes[b * t.block + i] = Code(w[b * t.block + i], s, r);
    }
  }
}

// Σ importance · (w - ŵ)² of a quantized channel (importance 1 when none is given).
double ChannelError(const float* w, int64_t k, const NpuWeightType& t, const Channel& c,
                    std::span<const float> importance) {
  double error = 0.0;
  for (int64_t i = 0; i < k; ++i) {
    const int64_t b = t.block > 0 ? i / t.block : 0;
    float scale = 0.0f;
    int32_t offset = 0;
    if (t.granularity == G::kLpbq) {
      scale = c.scales[0].scale * static_cast<float>(c.multipliers[b]);
    } else {
      const ScaleAndOffset& s = c.scales[t.granularity == G::kPerBlock ? b : 0];
      scale = s.scale;
      offset = s.offset;
    }
    const double d = static_cast<double>(w[i]) - static_cast<double>(scale) * (c.codes[i] + offset);
    error += (importance.empty() ? 1.0 : importance[i]) * d * d;
  }
  return error;
}

Status CheckInput(std::string_view name, const NpuWeightType& t, std::span<const float> data,
                  std::span<const int64_t> shape, std::span<const float> importance) {
  const std::string what = "tensor '" + std::string(name) + "'";
  if (shape.size() != 2 || shape[0] <= 0 || shape[1] <= 0) {
    return InvalidInput(what + ": shape " + ShapeString({shape.begin(), shape.end()}) +
                        " is not a non-empty matrix [out, in]; " + std::string(t.name) +
                        " quantizes 2-D weights");
  }
  const int64_t k = shape[1];
  if (t.block > 0 && k % t.block != 0) {
    return InvalidInput(what + ": " + std::to_string(k) + " columns are not a multiple of " +
                        std::string(t.name) + "'s block of " + std::to_string(t.block));
  }
  if (t.bits == 4 && k % 2 != 0) {
    return InvalidInput(what + ": " + std::to_string(k) +
                        " columns is odd; 4-bit codes are packed two a byte along a row");
  }
  if (static_cast<int64_t>(data.size()) != shape[0] * k) {
    return InvalidInput(what + ": " + std::to_string(data.size()) + " values for shape " +
                        ShapeString({shape.begin(), shape.end()}));
  }
  if (!importance.empty() && static_cast<int64_t>(importance.size()) != k) {
    return InvalidInput(what + ": " + std::to_string(importance.size()) +
                        " importance weights, expected one per column (" + std::to_string(k) +
                        ")");
  }
  for (size_t i = 0; i < importance.size(); ++i) {
    if (!(importance[i] >= 0.0f) || !std::isfinite(importance[i])) {
      return InvalidInput(what + ": importance of column " + std::to_string(i) + " is " +
                          std::to_string(importance[i]) + ", expected finite and >= 0");
    }
  }
  for (size_t i = 0; i < data.size(); ++i) {
    if (!std::isfinite(data[i])) {
      return InvalidInput(what + ": element " + std::to_string(i) + " (row " +
                          std::to_string(static_cast<int64_t>(i) / k) + ", column " +
                          std::to_string(static_cast<int64_t>(i) % k) + ") is " +
                          (std::isnan(data[i]) ? "NaN" : "infinite") +
                          "; a weight to quantize must be finite");
    }
  }
  return Ok();
}

}  // namespace

std::span<const NpuWeightType> NpuWeightTypes() { return kTypes; }

const NpuWeightType* FindNpuWeightType(std::string_view name) {
  for (const NpuWeightType& t : kTypes) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

std::string NpuWeightTypeNames() {
  std::string names;
  for (const NpuWeightType& t : kTypes) {
    if (!names.empty()) names += ", ";
    names += t.name;
  }
  return names;
}

Result<QuantizedTensor> QuantizeNpuWeight(std::string_view name, std::string_view type,
                                          std::span<const float> data,
                                          std::span<const int64_t> shape,
                                          std::span<const float> importance,
                                          const NpuQuantizeOptions& options) {
  const NpuWeightType* t = FindNpuWeightType(type);
  if (t == nullptr) {
    return InvalidInput("tensor '" + std::string(name) + "': unknown NPU weight layout '" +
                        std::string(type) + "'; expected one of " + NpuWeightTypeNames());
  }
  KITE_RETURN_IF_ERROR(CheckInput(name, *t, data, shape, importance));
  const int64_t n = shape[0];
  const int64_t k = shape[1];
  const CodeRange range = RangeOf(*t);

  QuantEncoding e;
  e.bits = t->bits;
  e.is_signed = !t->asymmetric;
  e.granularity = t->granularity;
  e.axis = 0;
  e.block_axis = 1;
  e.block_size = t->block;
  if (t->granularity == G::kLpbq) e.multiplier_bits = kLpbqMultiplierBits;

  QuantizedTensor out;
  out.name = std::string(name);
  out.dtype = StorageDType(e);
  out.shape = {n, k};
  const int64_t row_bytes = static_cast<int64_t>(KITE_TRY(BytesFor(out.dtype, k)));
  out.bytes.resize(static_cast<size_t>(n * row_bytes));

  Channel best;
  Channel trial;
  for (int64_t row = 0; row < n; ++row) {
    const float* w = data.data() + row * k;
    QuantizeChannel(w, k, *t, range, 1.0f, &best);
    if (options.clip_search) {
      double best_error = ChannelError(w, k, *t, best, importance);
      for (int step = 1; step < kClipSteps; ++step) {
        QuantizeChannel(w, k, *t, range, 1.0f - kClipStep * static_cast<float>(step), &trial);
        const double error = ChannelError(w, k, *t, trial, importance);
        if (error < best_error) {
          best_error = error;
          std::swap(best, trial);
        }
      }
    }
    WriteCodes(out.dtype, best.codes.data(), k, out.bytes.data() + row * row_bytes);
    for (const ScaleAndOffset& s : best.scales) {
      e.scales.push_back(s.scale);
      if (t->asymmetric) e.offsets.push_back(s.offset);
    }
    e.multipliers.insert(e.multipliers.end(), best.multipliers.begin(), best.multipliers.end());
  }
  KITE_RETURN_IF_ERROR(ValidateEncoding(e, out.shape, out.dtype));
  out.encoding = std::move(e);
  return out;
}

}  // namespace kite
