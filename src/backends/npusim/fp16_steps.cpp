// The FP16 path's support and steps (docs/npusim.md §11): a node whose output no quantize reads
// and whose activation inputs hold no codes is an fp16 node. Its inputs are rounded to f16 on
// entry (a no-op for another fp16 node's output; the convert from a neighbouring backend's f32)
// and its output is written as f16 values in f32. Which chips run it is the support rules'
// (npu_support.cpp's fp16 gate: v73 and later); this file is what npusim computes.
#include <algorithm>

#include "backends/npusim/fp16_kernels.h"
#include "backends/npusim/steps.h"
#include "backends/shared_kernels.h"
#include "tensor/dequantize.h"
#include "tensor/int_codes.h"

namespace kite::npusim {

namespace {

bool IsActivation(const Value& value) {
  return value.kind != ValueKind::kWeight && value.dtype != DType::kI32;
}

}  // namespace

void ReadF16(const TensorArg& in, std::span<float> out) {
  const float* data = in.as<const float>();
  const size_t rank = in.shape.size();
  std::vector<int64_t> index(rank, 0);
  int64_t at = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    out[i] = RoundToF16(data[at]);
    for (size_t d = rank; d-- > 0;) {
      at += in.strides[d];
      if (++index[d] < in.shape[d]) break;
      at -= in.strides[d] * in.shape[d];
      index[d] = 0;
    }
  }
}

namespace {

// The output as a span (CompiledPartition hands it contiguous).
std::span<float> Out(const TensorArg& out) {
  return {out.as<float>(), static_cast<size_t>(out.elements())};
}

// A step whose inputs `inputs` are read as f16 into scratch, then `run(inputs' values, out)`.
template <typename Run>
Step Rounded(std::vector<int> inputs, Run run) {
  return [inputs = std::move(inputs), run](std::span<const TensorArg> in, const TensorArg& out,
                                           const ExecContext& context) -> Status {
    ScratchArena arena(context.scratch);
    std::vector<std::span<const float>> values;
    for (int i : inputs) {
      const std::span<float> v = arena.Take<float>(in[i].elements());
      ReadF16(in[i], v);
      values.push_back(v);
    }
    return run(std::span<const std::span<const float>>(values), in, Out(out), context);
  };
}

}  // namespace

bool Fp16Node(const Graph& graph, const Node& node) {
  if (node.op() == OpKind::kQuantize || node.op() == OpKind::kDequantize) return false;
  if (graph.value(node.output).dtype != DType::kF32 || OutputEncoding(graph, node)) return false;
  return std::none_of(node.inputs.begin(), node.inputs.end(), [&](ValueId id) {
    return IsActivation(graph.value(id)) && CodesEncoding(graph, id) != nullptr;
  });
}

SupportResult SupportFp16(const MatMulAttrs&, const Graph& graph, const Node& node) {
  return NpuMatMulWeight(graph, node);
}
SupportResult SupportFp16(const AttentionAttrs& attrs, const Graph&, const Node&) {
  if (attrs.softcap > 0) {
    return SupportResult::No(
        "attention: soft-capped scores have no fp16 kernel in npusim "
        "(docs/npusim.md §11)");
  }
  return SupportResult::Yes();
}
SupportResult SupportFp16(const EmbeddingAttrs& attrs, const Graph& graph, const Node& node) {
  const Value& table = graph.value(node.inputs[0]);
  if (table.encoding || !Traits(table.dtype).can_dequantize) {
    return SupportResult::No("embedding: cannot read the table '" + table.name + "' (" +
                             std::string(DTypeName(table.dtype)) + ")");
  }
  return SupportResult::Yes();
}

Result<Step> PrepareFp16(const MatMulAttrs&, const NodeContext& c) {
  const TensorArg& w = c.Arg(1);
  const QuantEncoding& e = *c.graph.value(c.node.inputs[1]).encoding;
  auto plan = std::make_shared<Fp16MatMulPlan>();
  plan->n = w.shape[0];
  plan->k = w.shape[1];
  std::vector<int32_t> wide(static_cast<size_t>(plan->n * plan->k));
  kite::ReadCodes(w.dtype, w.data, 0, plan->n * plan->k, wide.data());
  const int64_t block = e.granularity == EncodingGranularity::kLpbq ? e.block_size : 0;
  const int64_t blocks = block > 0 ? plan->k / block : 0;
  for (int64_t n = 0; n < plan->n; ++n) {
    for (int64_t k = 0; k < plan->k; ++k) {
      const int32_t mult = block > 0 ? e.multipliers[n * blocks + k / block] : 1;
      plan->codes.push_back(static_cast<int16_t>(wide[n * plan->k + k] * mult));
    }
    plan->scales.push_back(e.scales[n]);
  }
  if (c.node.inputs.size() > 2) {
    const TensorArg& b = c.Arg(2);
    std::vector<float> bias(static_cast<size_t>(plan->n));
    KITE_RETURN_IF_ERROR(Dequantize(b.dtype, b.data, bias.data(), plan->n));
    plan->bias.assign(bias.begin(), bias.end());
  }
  ThreadPool* pool = c.pool;
  return Rounded({0}, [plan, pool](auto x, auto in, std::span<float> y, auto&) -> Status {
    Fp16MatMul(*plan, x[0], in[0].elements() / plan->k, y, pool);
    return Ok();
  });
}

Result<Step> PrepareFp16(const AddAttrs&, const NodeContext& c) {
  auto shape = std::make_shared<const Broadcast>(MakeBroadcast(c.Arg(0).shape, c.Arg(1).shape));
  return Rounded({0, 1}, [shape](auto v, auto, std::span<float> y, auto&) -> Status {
    Fp16AddMul(false, *shape, v[0], v[1], y);
    return Ok();
  });
}

Result<Step> PrepareFp16(const MulAttrs&, const NodeContext& c) {
  auto shape = std::make_shared<const Broadcast>(MakeBroadcast(c.Arg(0).shape, c.Arg(1).shape));
  return Rounded({0, 1}, [shape](auto v, auto, std::span<float> y, auto&) -> Status {
    Fp16AddMul(true, *shape, v[0], v[1], y);
    return Ok();
  });
}

Result<Step> PrepareFp16(const SiluAttrs&, const NodeContext&) {
  return Rounded({0}, [](auto v, auto, std::span<float> y, auto&) -> Status {
    Fp16Activation(Fp16Function::kSilu, v[0], y);
    return Ok();
  });
}

Result<Step> PrepareFp16(const GeluAttrs& attrs, const NodeContext&) {
  const Fp16Function f =
      attrs.approx == GeluApprox::kErf ? Fp16Function::kGeluErf : Fp16Function::kGeluTanh;
  return Rounded({0}, [f](auto v, auto, std::span<float> y, auto&) -> Status {
    Fp16Activation(f, v[0], y);
    return Ok();
  });
}

Result<Step> PrepareFp16(const SwiGluAttrs&, const NodeContext&) {
  return Rounded({0, 1}, [](auto v, auto, std::span<float> y, auto&) -> Status {
    Fp16Gated(Fp16Function::kSilu, v[0], v[1], y);
    return Ok();
  });
}

Result<Step> PrepareFp16(const GeGluAttrs&, const NodeContext&) {
  return Rounded({0, 1}, [](auto v, auto, std::span<float> y, auto&) -> Status {
    Fp16Gated(Fp16Function::kGeluTanh, v[0], v[1], y);
    return Ok();
  });
}

Result<Step> PrepareFp16(const RmsNormAttrs& attrs, const NodeContext& c) {
  const TensorArg& w = c.Arg(1);
  auto weight = std::make_shared<std::vector<float>>(static_cast<size_t>(w.elements()));
  KITE_RETURN_IF_ERROR(Dequantize(w.dtype, w.data, weight->data(), w.elements()));
  const float eps = attrs.eps;
  return Rounded({0}, [weight, eps](auto v, auto, std::span<float> y, auto&) -> Status {
    Fp16RmsNorm(*weight, eps, v[0], y);
    return Ok();
  });
}

Result<Step> PrepareFp16(const RopeAttrs& attrs, const NodeContext&) {
  auto inv_freq = std::make_shared<const std::vector<double>>(RopeInverseFrequencies(attrs));
  const bool neox = attrs.mode == RopeMode::kNeox;
  const float factor = attrs.attention_factor;
  return Rounded({0},
                 [inv_freq, neox, factor](auto v, auto in, std::span<float> y, auto&) -> Status {
                   const TensorArg& positions = in[1];
                   std::vector<int32_t> at(static_cast<size_t>(positions.shape[0]));
                   for (int64_t t = 0; t < positions.shape[0]; ++t) {
                     at[t] = PositionAt(positions, t);
                   }
                   Fp16Rope(*inv_freq, neox, factor, v[0], at, in[0].shape[1], in[0].shape[2], y);
                   return Ok();
                 });
}

Result<Step> PrepareFp16(const EmbeddingAttrs& attrs, const NodeContext&) {
  const float scale = attrs.scale;
  return Step(
      [scale](std::span<const TensorArg> in, const TensorArg& out, const ExecContext&) -> Status {
        KITE_RETURN_IF_ERROR(LookUpEmbedding(in[0], in[1], out, scale));
        for (float& x : Out(out)) x = RoundToF16(x);
        return Ok();
      });
}

}  // namespace kite::npusim
