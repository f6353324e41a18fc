// add, docs/npusim.md §5.1: both inputs rescaled to one fixed-point grid, one rounding.
#include <algorithm>
#include <cmath>

#include "backends/npusim/broadcast.h"
#include "backends/npusim/steps.h"

namespace kite::npusim {

// One common shift r for both inputs.
Result<AddPlan> PlanAdd(const ActEncoding& a, const ActEncoding& b, const ActEncoding& y) {
  const double ma = a.scale / y.scale;
  const double mb = b.scale / y.scale;
  const Multiplier larger = KITE_TRY(MakeMultiplier(std::max(ma, mb), "add"));
  return AddPlan{.a = a,
                 .b = b,
                 .y = y,
                 .ma = static_cast<int64_t>(std::nearbyint(std::ldexp(ma, larger.r))),
                 .mb = static_cast<int64_t>(std::nearbyint(std::ldexp(mb, larger.r))),
                 .r = larger.r};
}

void Add(const AddPlan& plan, const Broadcast& shape, std::span<const int32_t> a,
         std::span<const int32_t> b, std::span<int32_t> y) {
  ForEachBroadcast(shape, [&](int64_t i, int64_t ia, int64_t ib) {
    const Int128 acc =
        Int128{a[ia] + plan.a.offset} * plan.ma + Int128{b[ib] + plan.b.offset} * plan.mb;
    y[i] = plan.y.Clamp(RoundShift(acc, plan.r) - plan.y.offset);
  });
}

SupportResult Support(const AddAttrs&, const Graph& graph, const Node& node) {
  return EncodedActivations(graph, node, {0, 1});
}

Result<Step> Prepare(const AddAttrs&, const NodeContext& c) {
  auto plan = std::make_shared<const AddPlan>(
      KITE_TRY(PlanAdd(KITE_TRY(c.Input(0)), KITE_TRY(c.Input(1)), KITE_TRY(c.Output()))));
  auto shape = std::make_shared<const Broadcast>(MakeBroadcast(c.Arg(0).shape, c.Arg(1).shape));
  return TwoInputCodesStep(plan->a, plan->b, plan->y,
                           [plan, shape](std::span<const int32_t> a, std::span<const int32_t> b,
                                         std::span<int32_t> y) { Add(*plan, *shape, a, b, y); });
}

}  // namespace kite::npusim
