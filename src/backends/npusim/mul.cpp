// mul, docs/npusim.md §5.2: the product of the centred codes, requantized once.
#include "backends/npusim/broadcast.h"
#include "backends/npusim/steps.h"

namespace kite::npusim {

Result<MulPlan> PlanMul(const ActEncoding& a, const ActEncoding& b, const ActEncoding& y) {
  return MulPlan{
      .a = a, .b = b, .y = y, .m = KITE_TRY(MakeMultiplier(a.scale * b.scale / y.scale, "mul"))};
}

void Mul(const MulPlan& plan, const Broadcast& shape, std::span<const int32_t> a,
         std::span<const int32_t> b, std::span<int32_t> y) {
  ForEachBroadcast(shape, [&](int64_t i, int64_t ia, int64_t ib) {
    y[i] = Requantize(Int128{a[ia] + plan.a.offset} * (b[ib] + plan.b.offset), plan.m, plan.y);
  });
}

SupportResult Support(const MulAttrs&, const Graph& graph, const Node& node) {
  return EncodedActivations(graph, node, {0, 1});
}

Result<Step> Prepare(const MulAttrs&, const NodeContext& c) {
  auto plan = std::make_shared<const MulPlan>(
      KITE_TRY(PlanMul(KITE_TRY(c.Input(0)), KITE_TRY(c.Input(1)), KITE_TRY(c.Output()))));
  auto shape = std::make_shared<const Broadcast>(MakeBroadcast(c.Arg(0).shape, c.Arg(1).shape));
  return TwoInputCodesStep(plan->a, plan->b, plan->y,
                           [plan, shape](std::span<const int32_t> a, std::span<const int32_t> b,
                                         std::span<int32_t> y) { Mul(*plan, *shape, a, b, y); });
}

}  // namespace kite::npusim
