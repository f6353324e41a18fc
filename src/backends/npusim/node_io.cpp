#include "backends/npusim/node_io.h"

#include "backends/npusim/kernels.h"
#include "backends/npusim/steps.h"

namespace kite::npusim {

const QuantEncoding* CodesEncoding(const Graph& graph, ValueId id) {
  for (;;) {
    const Value& value = graph.value(id);
    if (value.kind != ValueKind::kNode) return nullptr;
    const Node& producer = graph.nodes()[value.producer];
    if (producer.is_view()) {
      id = producer.inputs[0];
      continue;
    }
    if (producer.op() != OpKind::kDequantize) return nullptr;
    return &producer.as<DequantizeAttrs>().encoding;
  }
}

const QuantEncoding* OutputEncoding(const Graph& graph, const Node& node) {
  for (const Node& other : graph.nodes()) {
    if (other.op() == OpKind::kQuantize && other.inputs[0] == node.output) {
      return &other.as<QuantizeAttrs>().encoding;
    }
  }
  return nullptr;
}

SupportResult EncodedActivations(const Graph& graph, const Node& node,
                                 std::initializer_list<int> inputs) {
  const std::string op(node.op_name());
  for (int i : inputs) {
    const Value& value = graph.value(node.inputs[i]);
    const QuantEncoding* encoding = CodesEncoding(graph, node.inputs[i]);
    if (encoding == nullptr) {
      return SupportResult::No(op + ": input '" + value.name +
                               "' is not quantized; npusim runs integer codes (a file from "
                               "`kite quantize --act-bits 8|16`, without --float-activations)");
    }
    if (auto act = ActivationEncoding(*encoding, "input '" + value.name + "'"); !act) {
      return SupportResult::No(op + ": " + act.error().message);
    }
  }
  const QuantEncoding* out = OutputEncoding(graph, node);
  if (out == nullptr) {
    return SupportResult::No(op + ": output '" + graph.value(node.output).name +
                             "' has no activation encoding; npusim writes integer codes");
  }
  if (auto act = ActivationEncoding(*out, "output '" + graph.value(node.output).name + "'"); !act) {
    return SupportResult::No(op + ": " + act.error().message);
  }
  return SupportResult::Yes();
}

Result<ActEncoding> NodeContext::Input(int index) const {
  const QuantEncoding* encoding = CodesEncoding(graph, node.inputs[index]);
  if (encoding == nullptr) {
    return Internal("npusim: input " + std::to_string(index) + " of '" + node.name +
                    "' has no encoding");
  }
  return ActivationEncoding(*encoding, "input of '" + node.name + "'");
}

Result<ActEncoding> NodeContext::Output() const {
  const QuantEncoding* encoding = OutputEncoding(graph, node);
  if (encoding == nullptr) return Internal("npusim: '" + node.name + "' has no output encoding");
  return ActivationEncoding(*encoding, "output of '" + node.name + "'");
}

void ReadCodes(const TensorArg& in, const ActEncoding& encoding, std::span<int32_t> codes) {
  const float* data = in.as<const float>();
  if (ContiguousStrides(in.shape) == in.strides) {
    QuantizeF32(encoding, {data, codes.size()}, codes);
    return;
  }
  const size_t rank = in.shape.size();
  std::vector<int64_t> index(rank, 0);
  int64_t at = 0;
  for (size_t i = 0; i < codes.size(); ++i) {
    codes[i] = QuantizeValue(data[at], encoding.scale_f32, encoding.offset, encoding.q_min,
                             encoding.q_max);
    for (size_t d = rank; d-- > 0;) {
      at += in.strides[d];
      if (++index[d] < in.shape[d]) break;
      at -= in.strides[d] * in.shape[d];
      index[d] = 0;
    }
  }
}

void WriteCodes(std::span<const int32_t> codes, const ActEncoding& encoding, const TensorArg& out) {
  DequantizeF32(encoding, codes, {out.as<float>(), codes.size()});
}

uint64_t ActivationScratch(const Graph& graph, const Node& node) {
  uint64_t bytes = ScratchArena::Bytes<int32_t>(graph.value(node.output).elements());
  for (ValueId input : node.inputs) {
    const Value& value = graph.value(input);
    if (value.kind != ValueKind::kWeight) {  // activations and i32 inputs (positions)
      bytes += ScratchArena::Bytes<int32_t>(value.elements());
    }
  }
  return bytes;
}

}  // namespace kite::npusim
