// RMSNorm, docs/npusim.md §8: the exact sum of squared centred codes, its rsqrt from the §6.3
// table, and one signed multiplier per column that carries sqrt(D) · w_d / s_y.
#include <cmath>

#include "backends/npusim/kernels.h"
#include "backends/npusim/steps.h"
#include "tensor/dequantize.h"

namespace kite::npusim {

Result<RmsNormPlan> PlanRmsNorm(std::span<const float> weight, float eps, const ActEncoding& x,
                                const ActEncoding& y) {
  RmsNormPlan plan;
  plan.dim = static_cast<int64_t>(weight.size());
  plan.x = x;
  plan.y = y;
  plan.eps_codes =
      static_cast<int64_t>(std::nearbyint(static_cast<double>(eps) / (x.scale * x.scale)));
  const double root = std::sqrt(static_cast<double>(plan.dim));
  for (float w : weight) {
    plan.columns.push_back(
        KITE_TRY(MakeMultiplier(root * static_cast<double>(w) / y.scale * 0x1p-30, "rms_norm")));
  }
  return plan;
}

void RmsNorm(const RmsNormPlan& plan, std::span<const int32_t> x, std::span<int32_t> y) {
  const int64_t dim = plan.dim;
  for (size_t row = 0; row * dim < x.size(); ++row) {
    const int32_t* in = x.data() + row * dim;
    int32_t* out = y.data() + row * dim;
    int64_t v = dim * plan.eps_codes;
    for (int64_t d = 0; d < dim; ++d) {
      const int64_t c = in[d] + plan.x.offset;
      v += c * c;
    }
    if (v == 0) {
      for (int64_t d = 0; d < dim; ++d) out[d] = plan.y.Clamp(-Int128{plan.y.offset});
      continue;
    }
    const FixedRsqrt rsqrt = Rsqrt(v);
    for (int64_t d = 0; d < dim; ++d) {
      const Multiplier& m = plan.columns[d];
      const Int128 product = Int128{(in[d] + plan.x.offset) * rsqrt.r} * m.m;
      out[d] = plan.y.Clamp(RoundShift(product, m.r + rsqrt.p / 2) - plan.y.offset);
    }
  }
}

SupportResult Support(const RmsNormAttrs&, const Graph& graph, const Node& node) {
  if (!Traits(graph.value(node.inputs[1]).dtype).can_dequantize) {
    return SupportResult::No("rms_norm: cannot read the weight '" +
                             graph.value(node.inputs[1]).name + "'");
  }
  return EncodedActivations(graph, node, {0});
}

Result<Step> Prepare(const RmsNormAttrs& attrs, const NodeContext& c) {
  const TensorArg& w = c.Arg(1);
  std::vector<float> weight(static_cast<size_t>(w.elements()));
  KITE_RETURN_IF_ERROR(Dequantize(w.dtype, w.data, weight.data(), w.elements()));
  auto plan = std::make_shared<const RmsNormPlan>(
      KITE_TRY(PlanRmsNorm(weight, attrs.eps, KITE_TRY(c.Input(0)), KITE_TRY(c.Output()))));
  return OneInputCodesStep(
      plan->x, plan->y,
      [plan](std::span<const int32_t> x, std::span<int32_t> y) { RmsNorm(*plan, x, y); });
}

}  // namespace kite::npusim
