// RoPE, docs/npusim.md §9: each pair rotated by the Q30 cos/sin of §6.4 in exact integer
// arithmetic and requantized once; the angle never passes through a narrow float.
#include "backends/npusim/kernels.h"
#include "backends/npusim/steps.h"

namespace kite::npusim {

Result<RopePlan> PlanRope(std::vector<double> inv_freq, bool neox, int32_t rotary_dim,
                          float attention_factor, const ActEncoding& x, const ActEncoding& y) {
  const double ratio = x.scale / y.scale * 0x1p-30;
  return RopePlan{
      .x = x,
      .y = y,
      .neox = neox,
      .rotary_dim = rotary_dim,
      .inv_freq = std::move(inv_freq),
      .rotate = KITE_TRY(MakeMultiplier(static_cast<double>(attention_factor) * ratio, "rope")),
      .pass = KITE_TRY(MakeMultiplier(ratio, "rope"))};
}

void Rope(const RopePlan& plan, std::span<const int32_t> x, std::span<const int32_t> positions,
          int64_t heads, int64_t dim, std::span<int32_t> y) {
  const int64_t half = plan.rotary_dim / 2;
  const int32_t o = plan.x.offset;
  for (size_t t = 0; t < positions.size(); ++t) {
    for (int64_t i = 0; i < half; ++i) {
      const FixedCosSin cs = RopeCosSin(positions[t], plan.inv_freq[i]);
      const int64_t i0 = plan.neox ? i : 2 * i;
      const int64_t i1 = plan.neox ? i + half : 2 * i + 1;
      for (int64_t h = 0; h < heads; ++h) {
        const int64_t base = (static_cast<int64_t>(t) * heads + h) * dim;
        const Int128 x0 = x[base + i0] + o;
        const Int128 x1 = x[base + i1] + o;
        y[base + i0] = Requantize(x0 * cs.cos - x1 * cs.sin, plan.rotate, plan.y);
        y[base + i1] = Requantize(x0 * cs.sin + x1 * cs.cos, plan.rotate, plan.y);
      }
    }
    for (int64_t h = 0; h < heads; ++h) {
      const int64_t base = (static_cast<int64_t>(t) * heads + h) * dim;
      for (int64_t d = plan.rotary_dim; d < dim; ++d) {
        y[base + d] = Requantize(Int128{x[base + d] + o} << 30, plan.pass, plan.y);
      }
    }
  }
}

SupportResult Support(const RopeAttrs&, const Graph& graph, const Node& node) {
  return EncodedActivations(graph, node, {0});
}

Result<Step> Prepare(const RopeAttrs& attrs, const NodeContext& c) {
  auto plan = std::make_shared<const RopePlan>(KITE_TRY(
      PlanRope(RopeInverseFrequencies(attrs), attrs.mode == RopeMode::kNeox, attrs.rotary_dim,
               attrs.attention_factor, KITE_TRY(c.Input(0)), KITE_TRY(c.Output()))));
  return Step([plan](std::span<const TensorArg> in, const TensorArg& out,
                     const ExecContext& context) -> Status {
    ScratchArena arena(context.scratch);
    const std::span<int32_t> x = arena.Take<int32_t>(in[0].elements());
    const std::span<int32_t> y = arena.Take<int32_t>(out.elements());
    ReadCodes(in[0], plan->x, x);
    const TensorArg& positions = in[1];
    const std::span<int32_t> at = arena.Take<int32_t>(positions.shape[0]);
    for (int64_t t = 0; t < positions.shape[0]; ++t) {
      at[t] = PositionAt(positions, t);
    }
    Rope(*plan, x, at, in[0].shape[1], in[0].shape[2], y);
    WriteCodes(y, plan->y, out);
    return Ok();
  });
}

}  // namespace kite::npusim
