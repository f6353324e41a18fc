// quantize and dequantize, docs/npusim.md §2.5: graph/ops.h's QuantizeValue and DequantizeValue,
// the definitions the QDQ execution uses too, so both sides put a float on the same code.
#include "backends/npusim/kernels.h"
#include "graph/ops.h"

namespace kite::npusim {

void QuantizeF32(const ActEncoding& y, std::span<const float> x, std::span<int32_t> q) {
  for (size_t i = 0; i < x.size(); ++i) {
    q[i] = QuantizeValue(x[i], y.scale_f32, y.offset, y.q_min, y.q_max);
  }
}

void DequantizeF32(const ActEncoding& x, std::span<const int32_t> q, std::span<float> out) {
  for (size_t i = 0; i < q.size(); ++i) out[i] = DequantizeValue(q[i], x.scale_f32, x.offset);
}

}  // namespace kite::npusim
