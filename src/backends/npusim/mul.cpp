// mul, docs/npusim.md §5.2: the product of the centred codes, requantized once.
#include "backends/npusim/broadcast.h"

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

}  // namespace kite::npusim
