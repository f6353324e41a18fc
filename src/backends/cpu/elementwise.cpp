// Element-wise ops on contiguous f32: add and mul (same shape, or b repeated over a's rows),
// silu, swiglu, geglu, gelu, softcap, softmax (last dim) and rms_norm. Vectorized with Highway,
// dispatched at run time; large tensors are split across the threads by rows.
#include <cmath>
#include <cstring>
#include <numbers>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backends/cpu/elementwise.cpp"
#define HWY_DISABLED_TARGETS (HWY_SSSE3 | HWY_SSE4)
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
// clang-format off: after highway.h, once per target
#include <hwy/contrib/math/math-inl.h>
// clang-format on

#include "backends/cpu/kernels.h"
#include "tensor/dequantize.h"
#include "tensor/tensor.h"

HWY_BEFORE_NAMESPACE();
namespace kite::cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;

// Applies a vector op to n elements, the tail through a partial load/store.
template <typename Fn>
HWY_INLINE void ForEachVector(int64_t n, Fn&& fn) {
  const DF df;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  int64_t i = 0;
  for (; i + lanes <= n; i += lanes) fn(i, static_cast<size_t>(lanes));
  if (i < n) fn(i, static_cast<size_t>(n - i));
}

// Highway 1.0 has no partial loads: a tail goes through a zero-padded copy.
HWY_INLINE hn::Vec<DF> Load(const float* p, size_t count) {
  const DF df;
  if (count == hn::Lanes(df)) return hn::LoadU(df, p);
  HWY_ALIGN float buffer[hn::MaxLanes(df)] = {};
  std::memcpy(buffer, p, count * sizeof(float));
  return hn::Load(df, buffer);
}
HWY_INLINE void Store(hn::Vec<DF> v, float* p, size_t count) {
  const DF df;
  if (count == hn::Lanes(df)) {
    hn::StoreU(v, df, p);
    return;
  }
  HWY_ALIGN float buffer[hn::MaxLanes(df)];
  hn::Store(v, df, buffer);
  std::memcpy(p, buffer, count * sizeof(float));
}

// Rows [begin, end) of a [rows, width] op b: b [rows, width] when b_full, else b [width] for
// every row.
void Binary(int op, const float* a, const float* b, bool b_full, int64_t width, float* out,
            int64_t begin, int64_t end) {
  for (int64_t row = begin; row < end; ++row) {
    const float* pa = a + row * width;
    const float* pb = b_full ? b + row * width : b;
    float* po = out + row * width;
    ForEachVector(width, [&](int64_t i, size_t count) {
      const auto va = Load(pa + i, count), vb = Load(pb + i, count);
      Store(op == 0 ? hn::Add(va, vb) : hn::Mul(va, vb), po + i, count);
    });
  }
}

// silu(x) = x / (1 + e^-x), computed as x · 1 / (1 + exp(-x)).
HWY_INLINE hn::Vec<DF> Silu(hn::Vec<DF> x) {
  const DF df;
  return hn::Div(x, hn::Add(hn::Set(df, 1.0f), hn::Exp(df, hn::Neg(x))));
}

void SiluRange(const float* x, float* out, int64_t begin, int64_t end) {
  ForEachVector(end - begin, [&](int64_t i, size_t count) {
    Store(Silu(Load(x + begin + i, count)), out + begin + i, count);
  });
}

void SwiGluRange(const float* gate, const float* up, float* out, int64_t begin, int64_t end) {
  ForEachVector(end - begin, [&](int64_t i, size_t count) {
    const int64_t at = begin + i;
    Store(hn::Mul(Silu(Load(gate + at, count)), Load(up + at, count)), out + at, count);
  });
}

// gelu's tanh approximation, 0.5 x (1 + tanh(z)) with z = √(2/π) (x + 0.044715 x³), computed
// as x / (1 + e^(-2z)) (the same function): 1 + tanh(z) cancels in f32 for x << 0.
HWY_INLINE hn::Vec<DF> GeluTanh(hn::Vec<DF> x) {
  const DF df;
  const auto k2 = hn::Set(df, static_cast<float>(2.0 * std::sqrt(2.0 / std::numbers::pi)));
  const auto z2 = hn::Mul(k2, hn::MulAdd(hn::Mul(hn::Set(df, 0.044715f), x), hn::Mul(x, x), x));
  return hn::Div(x, hn::Add(hn::Set(df, 1.0f), hn::Exp(df, hn::Neg(z2))));
}

void GeGluRange(const float* gate, const float* up, float* out, int64_t begin, int64_t end) {
  ForEachVector(end - begin, [&](int64_t i, size_t count) {
    const int64_t at = begin + i;
    Store(hn::Mul(GeluTanh(Load(gate + at, count)), Load(up + at, count)), out + at, count);
  });
}

void SoftcapRange(const float* x, float cap, float* out, int64_t begin, int64_t end) {
  const DF df;
  const auto c = hn::Set(df, cap), inv = hn::Set(df, 1.0f / cap);
  ForEachVector(end - begin, [&](int64_t i, size_t count) {
    const int64_t at = begin + i;
    Store(hn::Mul(c, hn::Tanh(df, hn::Mul(Load(x + at, count), inv))), out + at, count);
  });
}

// Rows [begin, end) of x [rows, d].
void SoftmaxRows(const float* x, float* out, int64_t d, int64_t begin, int64_t end) {
  const DF df;
  for (int64_t row = begin; row < end; ++row) {
    const float* px = x + row * d;
    float* po = out + row * d;
    float max = -INFINITY;
    for (int64_t i = 0; i < d; ++i) max = std::max(max, px[i]);
    auto sum = hn::Zero(df);
    ForEachVector(d, [&](int64_t i, size_t count) {
      const auto e = hn::Exp(df, hn::Sub(Load(px + i, count), hn::Set(df, max)));
      Store(e, po + i, count);
      // Lanes past `count` of a partial load are zero; exp(0 - max) must not join the sum.
      sum = hn::Add(sum, count == hn::Lanes(df) ? e : hn::IfThenElseZero(hn::FirstN(df, count), e));
    });
    const auto inv = hn::Set(df, 1.0f / hn::GetLane(hn::SumOfLanes(df, sum)));
    ForEachVector(d, [&](int64_t i, size_t count) {
      Store(hn::Mul(Load(po + i, count), inv), po + i, count);
    });
  }
}

// Rows [begin, end) of x [rows, d]; w [d] f32.
void RmsNormRows(const float* x, const float* w, float eps, float* out, int64_t d, int64_t begin,
                 int64_t end) {
  const DF df;
  for (int64_t row = begin; row < end; ++row) {
    const float* px = x + row * d;
    float* po = out + row * d;
    auto sum = hn::Zero(df);
    ForEachVector(d, [&](int64_t i, size_t count) {
      const auto v = Load(px + i, count);
      sum = hn::MulAdd(v, v, sum);
    });
    const double mean = static_cast<double>(hn::GetLane(hn::SumOfLanes(df, sum))) / d;
    const auto scale = hn::Set(df, static_cast<float>(1.0 / std::sqrt(mean + eps)));
    ForEachVector(d, [&](int64_t i, size_t count) {
      Store(hn::Mul(hn::Mul(Load(px + i, count), scale), Load(w + i, count)), po + i, count);
    });
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace kite::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace kite::cpu {

HWY_EXPORT(Binary);
HWY_EXPORT(SiluRange);
HWY_EXPORT(SwiGluRange);
HWY_EXPORT(GeGluRange);
HWY_EXPORT(SoftcapRange);
HWY_EXPORT(SoftmaxRows);
HWY_EXPORT(RmsNormRows);

namespace {

// Below this many elements one thread is faster than waking the others.
constexpr int64_t kParallelElements = 1 << 15;

// Splits `rows` rows of `row_elements` across the pool when the tensor is large.
template <typename Fn>
void ForRows(ThreadPool& pool, int64_t rows, int64_t row_elements, Fn&& fn) {
  if (rows * row_elements < kParallelElements || rows < 2) {
    fn(0, rows);
  } else {
    pool.ParallelFor(rows, fn);
  }
}

bool SameShape(const Value& a, const Value& b) { return a.shape == b.shape; }

// add/mul: b has a's shape, or b is one row [D] (or [1, .., D]) repeated over a's rows.
SupportResult BinarySupport(const Graph& graph, const Node& node) {
  SupportResult contiguous = ContiguousF32(graph, node);
  if (!contiguous.ok) return contiguous;
  const Value& a = graph.value(node.inputs[0]);
  const Value& b = graph.value(node.inputs[1]);
  const Value& out = graph.value(node.output);
  if (a.shape == out.shape &&
      (SameShape(a, b) || (b.elements() == b.shape.back() && b.shape.back() == a.shape.back()))) {
    return SupportResult::Yes();
  }
  return SupportResult::No("the cpu kernel broadcasts only one row over a's rows; got " +
                           ShapeString(a.shape) + " and " + ShapeString(b.shape));
}

Status RunBinary(int op, const KernelArgs& args) {
  const TensorArg& a = args.in[0];
  const TensorArg& b = args.in[1];
  const int64_t width = a.shape.back();
  const bool b_full = b.elements() == a.elements();
  ForRows(args.pool, a.elements() / width, width, [&](int64_t begin, int64_t end) {
    HWY_DYNAMIC_DISPATCH(Binary)
    (op, a.as<const float>(), b.as<const float>(), b_full, width, args.out.as<float>(), begin, end);
  });
  return Ok();
}

// Splits n elements into chunks for element-wise unary work.
template <typename Fn>
void ForElements(ThreadPool& pool, int64_t n, Fn&& fn) {
  if (n < kParallelElements) {
    fn(0, n);
    return;
  }
  const int64_t chunk = 4096;
  pool.ParallelFor((n + chunk - 1) / chunk, [&](int64_t begin, int64_t end) {
    fn(begin * chunk, std::min(n, end * chunk));
  });
}

}  // namespace

SupportResult Support(const AddAttrs&, const Graph& graph, const Node& node) {
  return BinarySupport(graph, node);
}
SupportResult Support(const MulAttrs&, const Graph& graph, const Node& node) {
  return BinarySupport(graph, node);
}
SupportResult Support(const SiluAttrs&, const Graph& graph, const Node& node) {
  return ContiguousF32(graph, node);
}
SupportResult Support(const SwiGluAttrs&, const Graph& graph, const Node& node) {
  return ContiguousF32(graph, node);
}
SupportResult Support(const GeGluAttrs&, const Graph& graph, const Node& node) {
  return ContiguousF32(graph, node);
}
SupportResult Support(const SoftcapAttrs&, const Graph& graph, const Node& node) {
  return ContiguousF32(graph, node);
}
SupportResult Support(const SoftmaxAttrs&, const Graph& graph, const Node& node) {
  return ContiguousF32(graph, node);
}
SupportResult Support(const GeluAttrs&, const Graph& graph, const Node& node) {
  return ContiguousF32(graph, node);
}
SupportResult Support(const RmsNormAttrs&, const Graph& graph, const Node& node) {
  const Value& x = graph.value(node.inputs[0]);
  if (x.dtype != DType::kF32 || !x.contiguous()) {
    return SupportResult::No("input '" + x.name + "' is not contiguous f32");
  }
  return SupportResult::Yes();
}

Status Run(const AddAttrs&, const KernelArgs& args) { return RunBinary(0, args); }
Status Run(const MulAttrs&, const KernelArgs& args) { return RunBinary(1, args); }

Status Run(const SiluAttrs&, const KernelArgs& args) {
  const float* x = args.in[0].as<const float>();
  float* out = args.out.as<float>();
  ForElements(args.pool, args.in[0].elements(), [&](int64_t begin, int64_t end) {
    HWY_DYNAMIC_DISPATCH(SiluRange)(x, out, begin, end);
  });
  return Ok();
}

Status Run(const SwiGluAttrs&, const KernelArgs& args) {
  const float* gate = args.in[0].as<const float>();
  const float* up = args.in[1].as<const float>();
  float* out = args.out.as<float>();
  ForElements(args.pool, args.in[0].elements(), [&](int64_t begin, int64_t end) {
    HWY_DYNAMIC_DISPATCH(SwiGluRange)(gate, up, out, begin, end);
  });
  return Ok();
}

Status Run(const GeGluAttrs&, const KernelArgs& args) {
  const float* gate = args.in[0].as<const float>();
  const float* up = args.in[1].as<const float>();
  float* out = args.out.as<float>();
  ForElements(args.pool, args.in[0].elements(), [&](int64_t begin, int64_t end) {
    HWY_DYNAMIC_DISPATCH(GeGluRange)(gate, up, out, begin, end);
  });
  return Ok();
}

Status Run(const SoftcapAttrs& attrs, const KernelArgs& args) {
  const float* x = args.in[0].as<const float>();
  float* out = args.out.as<float>();
  ForElements(args.pool, args.in[0].elements(), [&](int64_t begin, int64_t end) {
    HWY_DYNAMIC_DISPATCH(SoftcapRange)(x, attrs.cap, out, begin, end);
  });
  return Ok();
}

// gelu is rare in the decoders Kite runs; plain float math, split across threads.
Status Run(const GeluAttrs& attrs, const KernelArgs& args) {
  const float* x = args.in[0].as<const float>();
  float* out = args.out.as<float>();
  const bool erf = attrs.approx == GeluApprox::kErf;
  const float k = static_cast<float>(std::sqrt(2.0 / std::numbers::pi));
  ForElements(args.pool, args.in[0].elements(), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const float v = x[i];
      out[i] = erf ? 0.5f * v * (1.0f + std::erf(v / std::numbers::sqrt2_v<float>))
                   : 0.5f * v * (1.0f + std::tanh(k * (v + 0.044715f * v * v * v)));
    }
  });
  return Ok();
}

Status Run(const SoftmaxAttrs&, const KernelArgs& args) {
  const TensorArg& x = args.in[0];
  const int64_t d = x.shape.back();
  ForRows(args.pool, x.elements() / d, d, [&](int64_t begin, int64_t end) {
    HWY_DYNAMIC_DISPATCH(SoftmaxRows)(x.as<const float>(), args.out.as<float>(), d, begin, end);
  });
  return Ok();
}

// Scratch: the weight as f32 [D].
uint64_t Scratch(const RmsNormAttrs&, const Graph& graph, const Node& node) {
  return static_cast<uint64_t>(graph.value(node.inputs[1]).shape[0]) * sizeof(float);
}

Status Run(const RmsNormAttrs& attrs, const KernelArgs& args) {
  const TensorArg& x = args.in[0];
  const int64_t d = x.shape.back();
  float* w = reinterpret_cast<float*>(args.context.scratch.data());
  KITE_RETURN_IF_ERROR(Dequantize(args.in[1].dtype, args.in[1].data, w, d));
  ForRows(args.pool, x.elements() / d, d, [&](int64_t begin, int64_t end) {
    HWY_DYNAMIC_DISPATCH(RmsNormRows)
    (x.as<const float>(), w, attrs.eps, args.out.as<float>(), d, begin, end);
  });
  return Ok();
}

}  // namespace kite::cpu
#endif  // HWY_ONCE
