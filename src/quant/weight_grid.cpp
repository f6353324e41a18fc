#include "quant/weight_grid.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "base/half.h"

namespace kite {

Status WeightGrid::CheckColumns(int64_t columns) const {
  if (columns <= 0 || (group_size() > 0 && columns % group_size() != 0)) {
    return InvalidInput("grid " + std::string(name()) + ": a row of " + std::to_string(columns) +
                        " columns does not split into groups of " + std::to_string(group_size()));
  }
  return Ok();
}

Status CheckWeight(std::string_view name, std::span<const float> weight, int64_t out, int64_t in) {
  const std::string what = "weight '" + std::string(name) + "'";
  if (out <= 0 || in <= 0 || static_cast<int64_t>(weight.size()) != out * in) {
    return InvalidInput(what + ": " + std::to_string(weight.size()) + " values, expected [" +
                        std::to_string(out) + ", " + std::to_string(in) + "]");
  }
  for (size_t i = 0; i < weight.size(); ++i) {
    if (!std::isfinite(weight[i])) {
      return InvalidInput(what + ": value " + std::to_string(weight[i]) + " at [" +
                          std::to_string(i / in) + ", " + std::to_string(i % in) +
                          "], expected finite");
    }
  }
  return Ok();
}

float WeightGrid::Clamp(const GroupScale& g, float x) const {
  const float a = Value(g, min_code()), b = Value(g, max_code());
  return std::clamp(x, std::min(a, b), std::max(a, b));
}

void WeightGrid::QuantizeRow(std::span<float> row, float clip) const {
  const int64_t n = GroupColumns(static_cast<int64_t>(row.size()));
  for (size_t begin = 0; begin < row.size(); begin += n) {
    const std::span<float> group = row.subspan(begin, std::min<size_t>(n, row.size() - begin));
    const GroupScale g = Fit(group, clip);
    for (float& x : group) x = Value(g, Code(g, x));
  }
}

namespace {

class IntGrid final : public WeightGrid {
 public:
  IntGrid(std::string name, IntGridSpec spec) : name_(std::move(name)), spec_(spec) {
    const int32_t half = 1 << (spec.bits - 1);
    switch (spec.kind) {
      case IntGridKind::kSymmetric:
        lo_ = 1 - half;
        hi_ = half - 1;
        break;
      case IntGridKind::kSignedMax:  // codes 0 .. 2^b-1 around a zero point of 2^(b-1)
      case IntGridKind::kAsymmetric:
      case IntGridKind::kMinMax:
        lo_ = 0;
        hi_ = 2 * half - 1;
        break;
    }
  }

  std::string_view name() const override { return name_; }
  int64_t group_size() const override { return spec_.group_size; }

  GroupScale Fit(std::span<const float> values, float clip) const override {
    float lo = 0.0f, hi = 0.0f, signed_max = 0.0f;
    if (!values.empty()) lo = hi = values[0];
    for (float x : values) {
      lo = std::min(lo, x);
      hi = std::max(hi, x);
      if (std::fabs(x) > std::fabs(signed_max)) signed_max = x;
    }
    lo *= clip;
    hi *= clip;
    const int32_t half = 1 << (spec_.bits - 1);
    GroupScale g;
    switch (spec_.kind) {
      case IntGridKind::kSymmetric:
        g.scale = Store(std::max(-lo, hi) / static_cast<float>(half - 1));
        break;
      case IntGridKind::kSignedMax:
        g.scale = Store(signed_max * clip / static_cast<float>(-half));
        g.offset = -static_cast<float>(half) * g.scale;
        break;
      case IntGridKind::kAsymmetric: {
        lo = std::min(lo, 0.0f);
        hi = std::max(hi, 0.0f);
        g.scale = Store((hi - lo) / static_cast<float>(hi_));
        const float zero =
            g.scale > 0.0f ? std::clamp(std::round(-lo / g.scale), 0.0f, float(hi_)) : 0.0f;
        g.offset = -zero * g.scale;
        break;
      }
      case IntGridKind::kMinMax:
        g.scale = Store((hi - lo) / static_cast<float>(hi_));
        g.offset = Store(lo);
        break;
    }
    return g;
  }

  int32_t Code(const GroupScale& g, float x) const override {
    if (g.scale == 0.0f) return spec_.kind == IntGridKind::kSymmetric ? 0 : lo_;
    const float level = std::floor((x - g.offset) / g.scale + 0.5f);
    return static_cast<int32_t>(std::clamp(level, float(lo_), float(hi_)));
  }

  float Value(const GroupScale& g, int32_t code) const override {
    return g.offset + g.scale * static_cast<float>(code);
  }
  // Code and Value inlined over each group (the searches of AWQ and SeqMSE call this millions
  // of times); the same arithmetic, so the same values.
  void QuantizeRow(std::span<float> row, float clip) const override {
    const size_t n = static_cast<size_t>(GroupColumns(static_cast<int64_t>(row.size())));
    for (size_t begin = 0; begin < row.size(); begin += n) {
      const std::span<float> group = row.subspan(begin, std::min(n, row.size() - begin));
      const GroupScale g = Fit(group, clip);
      if (g.scale == 0.0f) {
        const float v = Value(g, Code(g, 0.0f));
        for (float& x : group) x = v;
        continue;
      }
      for (float& x : group) {
        const float level =
            std::clamp(std::floor((x - g.offset) / g.scale + 0.5f), float(lo_), float(hi_));
        x = g.offset + g.scale * level;
      }
    }
  }
  int32_t min_code() const override { return lo_; }
  int32_t max_code() const override { return hi_; }

 private:
  // The scale as the format stores it.
  float Store(float x) const { return spec_.f16_scale ? F16ToF32(F32ToF16(x)) : x; }

  std::string name_;
  IntGridSpec spec_;
  int32_t lo_ = 0;
  int32_t hi_ = 0;
};

std::string SpecName(const IntGridSpec& spec) {
  static constexpr const char* kKinds[] = {"sym", "asym", "signed_max", "min_max"};
  return "int" + std::to_string(spec.bits) + "_" + kKinds[static_cast<int>(spec.kind)] +
         (spec.group_size > 0 ? "_g" + std::to_string(spec.group_size) : "");
}

}  // namespace

Result<std::unique_ptr<WeightGrid>> MakeIntGrid(const IntGridSpec& spec) {
  if (spec.bits < 2 || spec.bits > 8) {
    return InvalidInput("integer grid of " + std::to_string(spec.bits) + " bits, expected 2..8");
  }
  if (spec.group_size < 0) {
    return InvalidInput("integer grid with group size " + std::to_string(spec.group_size) +
                        ", expected 0 (per channel) or more");
  }
  return std::make_unique<IntGrid>(SpecName(spec), spec);
}

Result<std::unique_ptr<WeightGrid>> MakeWeightGrid(std::string_view name) {
  struct Named {
    std::string_view name;
    IntGridSpec spec;
  };
  using K = IntGridKind;
  static const Named kGrids[] = {
      {"int8", {K::kSymmetric, 8, 0, false}},
      {"int4", {K::kSymmetric, 4, 0, false}},
      {"int8_asym", {K::kAsymmetric, 8, 0, false}},
      {"int4_asym", {K::kAsymmetric, 4, 0, false}},
      {"int4_g32", {K::kSymmetric, 4, 32, false}},
      {"int4_g64", {K::kSymmetric, 4, 64, false}},
      {"int4_g128", {K::kSymmetric, 4, 128, false}},
      {"int4_g32_asym", {K::kAsymmetric, 4, 32, false}},
      {"int4_g64_asym", {K::kAsymmetric, 4, 64, false}},
      {"int4_g128_asym", {K::kAsymmetric, 4, 128, false}},
      {"q4_0", {K::kSignedMax, 4, 32, true}},
      {"q5_0", {K::kSignedMax, 5, 32, true}},
      {"q8_0", {K::kSymmetric, 8, 32, true}},
      {"q4_1", {K::kMinMax, 4, 32, true}},
      {"q5_1", {K::kMinMax, 5, 32, true}},
      {"q4_k", {K::kMinMax, 4, 32, true}},
      {"q5_k", {K::kMinMax, 5, 32, true}},
      {"q2_k", {K::kMinMax, 2, 16, true}},
      {"q3_k", {K::kSignedMax, 3, 16, true}},
      {"q6_k", {K::kSignedMax, 6, 16, true}},
      {"iq4_nl", {K::kSignedMax, 4, 32, true}},
      {"iq4_xs", {K::kSignedMax, 4, 32, true}},
  };
  std::string known;
  for (const Named& grid : kGrids) {
    if (grid.name == name) return std::make_unique<IntGrid>(std::string(name), grid.spec);
    known += (known.empty() ? "" : ", ") + std::string(grid.name);
  }
  return InvalidInput("unknown weight grid '" + std::string(name) + "', expected one of " + known);
}

}  // namespace kite
