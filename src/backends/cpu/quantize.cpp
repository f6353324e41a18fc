// quantize and dequantize (ops.h) on contiguous values: rows of the innermost dim in parallel,
// one scale and offset per row (per-tensor, or per-axis on a dim before the last) or per
// element (per-axis on the last dim).
#include <cstdint>

#include "backends/cpu/kernels.h"

namespace kite::cpu {

namespace {

// Calls fn(begin, end, scale, offset) for runs of elements that share a scale and offset.
template <typename Fn>
void ForEachRun(const QuantEncoding& e, const std::vector<int64_t>& shape, int64_t begin,
                int64_t end, Fn&& fn) {
  if (e.granularity == EncodingGranularity::kPerTensor) {
    fn(begin, end, e.scales[0], e.offsets.empty() ? 0 : e.offsets[0]);
    return;
  }
  int64_t inner = 1;  // elements per index of the axis
  for (size_t d = e.axis + 1; d < shape.size(); ++d) inner *= shape[d];
  const int64_t channels = shape[e.axis];
  for (int64_t i = begin; i < end;) {
    const int64_t channel = (i / inner) % channels;
    const int64_t run_end = std::min(end, (i / inner + 1) * inner);
    fn(i, run_end, e.scales[channel], e.offsets.empty() ? 0 : e.offsets[channel]);
    i = run_end;
  }
}

template <typename Int>
void QuantizeRange(const QuantEncoding& e, const std::vector<int64_t>& shape, const float* x,
                   Int* q, int64_t begin, int64_t end) {
  const int32_t q_min = e.q_min(), q_max = e.q_max();
  ForEachRun(e, shape, begin, end, [&](int64_t b, int64_t en, float scale, int32_t offset) {
    for (int64_t i = b; i < en; ++i) {
      q[i] = static_cast<Int>(QuantizeValue(x[i], scale, offset, q_min, q_max));
    }
  });
}

template <typename Int>
void DequantizeRange(const QuantEncoding& e, const std::vector<int64_t>& shape, const Int* q,
                     float* x, int64_t begin, int64_t end) {
  ForEachRun(e, shape, begin, end, [&](int64_t b, int64_t en, float scale, int32_t offset) {
    for (int64_t i = b; i < en; ++i) x[i] = DequantizeValue(q[i], scale, offset);
  });
}

// Calls fn(pointer-to-Int) with the output or input data as its integer type.
template <typename Fn>
void WithIntegers(DType dtype, std::byte* data, Fn&& fn) {
  switch (dtype) {
    case DType::kU8:
      fn(reinterpret_cast<uint8_t*>(data));
      break;
    case DType::kI8:
      fn(reinterpret_cast<int8_t*>(data));
      break;
    case DType::kU16:
      fn(reinterpret_cast<uint16_t*>(data));
      break;
    default:
      fn(reinterpret_cast<int16_t*>(data));
      break;
  }
}

constexpr int64_t kGrain = 1 << 14;  // elements per task: small values run on one thread

SupportResult Contiguous(const Graph& graph, const Node& node) {
  const Value& in = graph.value(node.inputs[0]);
  if (!in.contiguous()) {
    return SupportResult::No("input '" + in.name + "' is a strided view; the cpu kernel reads " +
                             "contiguous values");
  }
  return SupportResult::Yes();
}

}  // namespace

SupportResult Support(const QuantizeAttrs&, const Graph& graph, const Node& node) {
  return Contiguous(graph, node);
}
SupportResult Support(const DequantizeAttrs&, const Graph& graph, const Node& node) {
  return Contiguous(graph, node);
}

Status Run(const QuantizeAttrs& attrs, const KernelArgs& args) {
  const TensorArg& x = args.in[0];
  const float* src = x.as<const float>();
  WithIntegers(args.out.dtype, args.out.data, [&](auto* q) {
    args.pool.ParallelForChunks(x.elements(), kGrain, [&](int64_t begin, int64_t end) {
      QuantizeRange(attrs.encoding, x.shape, src, q, begin, end);
    });
  });
  return Ok();
}

Status Run(const DequantizeAttrs& attrs, const KernelArgs& args) {
  const TensorArg& q = args.in[0];
  float* dst = args.out.as<float>();
  WithIntegers(q.dtype, q.data, [&](auto* ints) {
    const auto* values = ints;
    args.pool.ParallelForChunks(q.elements(), kGrain, [&](int64_t begin, int64_t end) {
      DequantizeRange(attrs.encoding, q.shape, values, dst, begin, end);
    });
  });
  return Ok();
}

}  // namespace kite::cpu
