#include "backends/cpu/kernels.h"
#include "backends/cpu/matmul_kernels.h"
#include "backends/cpu/tile_shape.h"
#include "tensor/dequantize.h"

namespace kite::cpu {

namespace {

int64_t Tokens(const Value& x) { return x.elements() / x.shape.back(); }

uint64_t Align64(uint64_t bytes) { return (bytes + 63) / 64 * 64; }

// The packed layout of weight `w`: by its dtype, or (integer codes) by its encoding.
Result<PackLayout> WeightLayout(const Value& w) {
  if (w.encoding) return LayoutOfEncoded(w.dtype, *w.encoding, w.shape);
  return LayoutOf(w.dtype);
}

}  // namespace

SupportResult Support(const MatMulAttrs&, const Graph& graph, const Node& node) {
  const Value& x = graph.value(node.inputs[0]);
  const Value& w = graph.value(node.inputs[1]);
  if (graph.memory_of(w).kind != ValueKind::kWeight) {
    return SupportResult::No("weight '" + w.name + "' is computed; the cpu matmul repacks " +
                             "constant weights once and needs them at compile time");
  }
  if (!w.contiguous()) return SupportResult::No("weight '" + w.name + "' is a strided view");
  if (!x.contiguous()) return SupportResult::No("input '" + x.name + "' is a strided view");
  const auto layout = WeightLayout(w);
  if (!layout) return SupportResult::No(layout.error().message);
  if (w.shape[1] % layout->source_block != 0) {
    return SupportResult::No("K " + std::to_string(w.shape[1]) + " is not a multiple of " +
                             std::to_string(layout->source_block));
  }
  if (node.inputs.size() == 3 && !Traits(graph.value(node.inputs[2]).dtype).can_dequantize) {
    return SupportResult::No("bias '" + graph.value(node.inputs[2]).name + "' is " +
                             std::string(DTypeName(graph.value(node.inputs[2]).dtype)));
  }
  return SupportResult::Yes();
}

// Scratch: the dequantized bias [N], then the quantized (integer weights) or bf16-rounded
// activations (ActivationScratchBytes).
uint64_t Scratch(const MatMulAttrs&, const Graph& graph, const Node& node) {
  const Value& w = graph.value(node.inputs[1]);
  const auto layout = WeightLayout(w);
  if (!layout) return 0;
  return Align64(w.shape[0] * sizeof(float)) +
         ActivationScratchBytes(*layout, Tokens(graph.value(node.inputs[0])), w.shape[1]);
}

// x [..., K] f32 · W [N, K]ᵀ (+ bias [N]) -> out [..., N]. Output rows (groups of 16 weight
// rows) are taken by the threads in chunks; for integer weights the activation rows are first
// quantized to int8 (or rounded to bf16 for AMX's tiles), split by rows too.
Status Run(const MatMulAttrs&, const KernelArgs& args) {
  const TensorArg& x = args.in[0];
  const PackedMatrix& w = *args.packed;
  MatMulJob job;
  job.w = &w;
  job.x = x.as<const float>();
  job.x_stride = w.cols();
  job.tokens = x.elements() / w.cols();
  job.out = args.out.as<float>();
  job.tile = DecodeTileFor(w.layout());
  job.decode_steps =
      args.context.kv_cache != nullptr && args.context.kv_cache->decode_steps(job.tokens);
  std::byte* scratch = args.context.scratch.data();
  if (args.in.size() == 3) {
    float* bias = reinterpret_cast<float*>(scratch);
    KITE_RETURN_IF_ERROR(Dequantize(args.in[2].dtype, args.in[2].data, bias, w.rows()));
    job.bias = bias;
  }
  scratch += Align64(w.rows() * sizeof(float));
  AssignActivationScratch(&job, scratch);
  RunMatMul(job, args.pool);
  return Ok();
}

}  // namespace kite::cpu
