// SwiGLU and GeGLU, docs/npusim.md §6.1: the gate's table value (SiLU or tanh-GELU over its
// code) times the up projection's centred code, requantized once.
#include "backends/npusim/kernels.h"
#include "backends/npusim/steps.h"

namespace kite::npusim {

Result<GatedPlan> PlanGated(TableFunction function, const ActEncoding& gate, const ActEncoding& up,
                            const ActEncoding& y) {
  ActivationTable table = MakeActivationTable(function, gate);
  const Multiplier m = KITE_TRY(MakeMultiplier(table.scale * up.scale / y.scale, "gated"));
  return GatedPlan{.gate = gate, .up = up, .y = y, .table = std::move(table), .m = m};
}

void Gated(const GatedPlan& plan, std::span<const int32_t> gate, std::span<const int32_t> up,
           std::span<int32_t> y) {
  for (size_t i = 0; i < gate.size(); ++i) {
    const Int128 product = Int128{plan.table.entries[gate[i]]} * (up[i] + plan.up.offset);
    y[i] = Requantize(product, plan.m, plan.y);
  }
}

namespace {

Result<Step> PrepareGated(TableFunction function, const NodeContext& c) {
  auto plan = std::make_shared<const GatedPlan>(KITE_TRY(
      PlanGated(function, KITE_TRY(c.Input(0)), KITE_TRY(c.Input(1)), KITE_TRY(c.Output()))));
  return TwoInputCodesStep(plan->gate, plan->up, plan->y,
                           [plan](std::span<const int32_t> gate, std::span<const int32_t> up,
                                  std::span<int32_t> y) { Gated(*plan, gate, up, y); });
}

}  // namespace

SupportResult Support(const SwiGluAttrs&, const Graph& graph, const Node& node) {
  return EncodedActivations(graph, node, {0, 1});
}

Result<Step> Prepare(const SwiGluAttrs&, const NodeContext& c) {
  return PrepareGated(TableFunction::kSilu, c);
}

SupportResult Support(const GeGluAttrs&, const Graph& graph, const Node& node) {
  return EncodedActivations(graph, node, {0, 1});
}

Result<Step> Prepare(const GeGluAttrs&, const NodeContext& c) {
  return PrepareGated(TableFunction::kGeluTanh, c);
}

}  // namespace kite::npusim
