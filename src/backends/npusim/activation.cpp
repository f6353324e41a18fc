// SiLU and GELU by a table over the input code (docs/npusim.md §6.1), and the gated forms
// SwiGLU and GeGLU: the table's value times the up projection's centred code.
#include "backends/npusim/kernels.h"

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

}  // namespace kite::npusim
