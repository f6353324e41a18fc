// SiLU and GELU by a table over the input code (docs/npusim.md §6.1), requantized once.
#include "backends/npusim/kernels.h"
#include "backends/npusim/steps.h"

namespace kite::npusim {

Result<ActivationPlan> PlanActivation(TableFunction function, const ActEncoding& x,
                                      const ActEncoding& y) {
  ActivationTable table = MakeActivationTable(function, x);
  const Multiplier m = KITE_TRY(MakeMultiplier(table.scale / y.scale, "activation"));
  return ActivationPlan{.x = x, .y = y, .table = std::move(table), .m = m};
}

void Activation(const ActivationPlan& plan, std::span<const int32_t> x, std::span<int32_t> y) {
  for (size_t i = 0; i < x.size(); ++i) y[i] = Requantize(plan.table.entries[x[i]], plan.m, plan.y);
}

SupportResult Support(const SiluAttrs&, const Graph& graph, const Node& node) {
  return EncodedActivations(graph, node, {0});
}

Result<Step> Prepare(const SiluAttrs&, const NodeContext& c) {
  auto plan = std::make_shared<const ActivationPlan>(
      KITE_TRY(PlanActivation(TableFunction::kSilu, KITE_TRY(c.Input(0)), KITE_TRY(c.Output()))));
  return OneInputCodesStep(
      plan->x, plan->y,
      [plan](std::span<const int32_t> x, std::span<int32_t> y) { Activation(*plan, x, y); });
}

SupportResult Support(const GeluAttrs&, const Graph& graph, const Node& node) {
  return EncodedActivations(graph, node, {0});
}

Result<Step> Prepare(const GeluAttrs& attrs, const NodeContext& c) {
  auto plan = std::make_shared<const ActivationPlan>(KITE_TRY(PlanActivation(
      attrs.approx == GeluApprox::kErf ? TableFunction::kGeluErf : TableFunction::kGeluTanh,
      KITE_TRY(c.Input(0)), KITE_TRY(c.Output()))));
  return OneInputCodesStep(
      plan->x, plan->y,
      [plan](std::span<const int32_t> x, std::span<int32_t> y) { Activation(*plan, x, y); });
}

}  // namespace kite::npusim
