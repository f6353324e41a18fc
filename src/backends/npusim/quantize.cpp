// quantize and dequantize, docs/npusim.md §2.5: graph/ops.h's QuantizeValue and DequantizeValue,
// the definitions the QDQ execution uses too, so both sides put a float on the same code.
#include <cmath>

#include "backends/npusim/kernels.h"
#include "graph/ops.h"
#include "backends/npusim/steps.h"
#include "tensor/int_codes.h"

namespace kite::npusim {

// QuantizeValue with its rounding done by the add-and-subtract of 1.5 · 2^23, which rounds a
// float below 2^22 in magnitude half to even in the default rounding mode, exactly as
// std::nearbyint does, without the library call that saves and restores the floating-point
// environment (the baseline x86-64 target has no rounding instruction). Larger values, inf and
// NaN keep their own value and are clamped as QuantizeValue clamps them: every code has
// |x / scale| < 2^17. NpusimOpsTest.QuantizeEqualsReference checks ties, clamps and NaN.
void QuantizeF32(const ActEncoding& y, std::span<const float> x, std::span<int32_t> q) {
  const float lo = static_cast<float>(y.q_min);
  const float hi = static_cast<float>(y.q_max);
  const float offset = static_cast<float>(y.offset);
  for (size_t i = 0; i < x.size(); ++i) {
    const float v = x[i] / y.scale_f32;
    const float rounded = std::fabs(v) < 0x1p22f ? (v + 0x1.8p23f) - 0x1.8p23f : v;
    const float code = rounded - offset;
    q[i] = !(code >= lo) ? y.q_min : code > hi ? y.q_max : static_cast<int32_t>(code);
  }
}

void DequantizeF32(const ActEncoding& x, std::span<const int32_t> q, std::span<float> out) {
  for (size_t i = 0; i < q.size(); ++i) out[i] = DequantizeValue(q[i], x.scale_f32, x.offset);
}


// The quantize and dequantize nodes themselves: per-tensor u8/u16 activations (those the other
// npusim nodes read and write).
SupportResult Support(const QuantizeAttrs& attrs, const Graph&, const Node& node) {
  if (auto act = ActivationEncoding(attrs.encoding, "quantize '" + node.name + "'"); !act) {
    return SupportResult::No(act.error().message);
  }
  return SupportResult::Yes();
}
SupportResult Support(const DequantizeAttrs& attrs, const Graph&, const Node& node) {
  if (auto act = ActivationEncoding(attrs.encoding, "dequantize '" + node.name + "'"); !act) {
    return SupportResult::No(act.error().message);
  }
  return SupportResult::Yes();
}

Result<Step> Prepare(const QuantizeAttrs& attrs, const NodeContext& c) {
  const ActEncoding y = KITE_TRY(ActivationEncoding(attrs.encoding, c.node.name));
  return Step([y](std::span<const TensorArg> in, const TensorArg& out,
                  const ExecContext& context) -> Status {
    ScratchArena arena(context.scratch);
    const std::span<int32_t> q = arena.Take<int32_t>(in[0].elements());
    ReadCodes(in[0], y, q);  // §2.5 on any strides
    kite::WriteCodes(out.dtype, q.data(), out.elements(), out.data);
    return Ok();
  });
}

Result<Step> Prepare(const DequantizeAttrs& attrs, const NodeContext& c) {
  const ActEncoding x = KITE_TRY(ActivationEncoding(attrs.encoding, c.node.name));
  return Step([x](std::span<const TensorArg> in, const TensorArg& out,
                  const ExecContext& context) -> Status {
    ScratchArena arena(context.scratch);
    const std::span<int32_t> q = arena.Take<int32_t>(in[0].elements());
    kite::ReadCodes(in[0].dtype, in[0].data, 0, in[0].elements(), q.data());
    WriteCodes(q, x, out);
    return Ok();
  });
}

}  // namespace kite::npusim
