#include "backends/npusim/support/npu_support.h"

#include "backends/npusim/node_io.h"
#include "backends/npusim/support/rules.h"

namespace kite {

NpuVerdict NpuRule(const Graph& graph, const Node& node, const NpuTarget& target) {
  switch (node.op()) {
    case OpKind::kMatMul:
      return npu_rules::MatMul(graph, node, target);
    case OpKind::kAttention:
      return npu_rules::Attention(graph, node, target);
    case OpKind::kRope:
      return npu_rules::Rope(graph, node, target);
    case OpKind::kSoftcap:
      return npu_rules::Softcap(graph, node, target);
    case OpKind::kEmbedding:
      return npu_rules::Embedding(graph, node, target);
    default:
      return npu_rules::Elementwise(graph, node, target);
  }
}

ActivationKind ActivationOf(const Graph& graph, ValueId id, const NpuTarget& target) {
  const Value* v = &graph.value(id);
  if (!v->encoding && v->kind == ValueKind::kNode && v->producer >= 0) {
    const Node& producer = graph.nodes()[v->producer];
    if (producer.op() == OpKind::kDequantize) v = &graph.value(producer.inputs[0]);
  }
  if (v->encoding) return v->encoding->bits > 8 ? ActivationKind::kInt16 : ActivationKind::kInt8;
  return target.activations;
}

Result<int> NpuKvBytes(DType kv_dtype) {
  const uint64_t bytes = KITE_TRY(BytesFor(kv_dtype, 1024)) / 1024;
  return static_cast<int>(std::max<uint64_t>(bytes, 1));
}

std::string_view ActivationName(ActivationKind kind) {
  switch (kind) {
    case ActivationKind::kInt8:
      return "8-bit";
    case ActivationKind::kInt16:
      return "16-bit";
    case ActivationKind::kFp16:
      return "fp16";
  }
  return "16-bit";
}

namespace npu_rules {

SupportResult Fp16Gate(const Graph& graph, const Node& node, const NpuTarget& target) {
  if (target.chip.fp16) return SupportResult::Yes();
  for (ValueId id : node.inputs) {
    const Value& v = graph.value(id);
    if (v.kind == ValueKind::kWeight || v.dtype == DType::kI32) continue;  // ids, positions
    if (ActivationOf(graph, id, target) == ActivationKind::kFp16) {
      return SupportResult::No(std::string(node.op_name()) +
                               ": fp16 activations need FP16, which " + target.chip.Label() +
                               " lacks; quantize the activations to 16 bits (--recipe w8a16)");
    }
  }
  // A float output no quantize reads is an fp16 value too (a float graph's embedding has no
  // activation input); the convert ops' outputs are the integer side's.
  const Value& out = graph.value(node.output);
  const bool convert = node.op() == OpKind::kQuantize || node.op() == OpKind::kDequantize;
  if (!convert && out.dtype == DType::kF32 && target.activations == ActivationKind::kFp16 &&
      npusim::OutputEncoding(graph, node) == nullptr) {
    return SupportResult::No(std::string(node.op_name()) + ": fp16 output '" + out.name +
                             "' needs FP16, which " + target.chip.Label() +
                             " lacks; quantize the activations to 16 bits (--recipe w8a16)");
  }
  return SupportResult::Yes();
}

}  // namespace npu_rules

}  // namespace kite
