#include "backends/ref/kernels.h"
#include "backends/ref/walk.h"
#include "graph/encoding.h"
#include "tensor/dequantize.h"
#include "tensor/int_codes.h"

namespace kite::ref {

namespace {

// Row n of an encoded weight w [N, K], each code decoded exactly as its encoding says:
// scale · (q + offset), with the scale and offset ScaleOffsetAt gives the element.
void DecodeEncodedRow(const TensorArg& w, int64_t n, float* row) {
  const int64_t k = w.shape[1];
  for (int64_t i = 0; i < k; ++i) {
    int32_t q = 0;
    ReadCodes(w.dtype, w.data, n * k + i, 1, &q);
    const ScaleOffset so = ScaleOffsetAt(*w.encoding, w.shape, n * k + i);
    row[i] = so.scale * static_cast<float>(q + so.offset);
  }
}

}  // namespace

SupportResult Support(const MatMulAttrs&, const Graph& graph, const Node& node) {
  const Value& w = graph.value(node.inputs[1]);
  // An encoded weight holds integer codes (i8, u8, i4, ...), decoded here by its encoding.
  SupportResult readable = w.encoding && IsCodeType(w.dtype) ? SupportResult::Yes()
                                                              : ReadableWeight(w, "weight");
  if (readable.ok && node.inputs.size() == 3) {
    readable = ReadableWeight(graph.value(node.inputs[2]), "bias");
  }
  return readable;
}

// Scratch: one dequantized weight row [K] and the dequantized bias [N], f32.
uint64_t Scratch(const MatMulAttrs&, const Graph& graph, const Node& node) {
  const Value& w = graph.value(node.inputs[1]);
  return static_cast<uint64_t>(w.shape[1] + w.shape[0]) * sizeof(float);
}

// x [..., K] f32, w [N, K] (any dequantizable dtype, or integer codes with an encoding),
// bias [N] -> out [..., N] f32.
// Each weight row is dequantized once and dotted with every row of x, accumulating in double.
Status Run(const MatMulAttrs&, const KernelArgs& args) {
  const TensorArg& x = args.in[0];
  const TensorArg& w = args.in[1];
  const int64_t n_out = w.shape[0];
  const int64_t k = w.shape[1];
  float* w_row = reinterpret_cast<float*>(args.context.scratch.data());  // [K]
  float* bias = w_row + k;                                               // [N]
  const bool has_bias = args.in.size() == 3;
  if (has_bias) {
    KITE_RETURN_IF_ERROR(Dequantize(args.in[2].dtype, args.in[2].data, bias, n_out));
  }
  const int64_t w_row_bytes = k / Traits(w.dtype).block_size * Traits(w.dtype).block_bytes;
  const float* xs = x.as<const float>();
  const int64_t x_step = x.strides.back();
  float* out = args.out.as<float>();
  for (int64_t n = 0; n < n_out; ++n) {
    if (w.encoding != nullptr) {
      DecodeEncodedRow(w, n, w_row);
    } else {
      KITE_RETURN_IF_ERROR(Dequantize(w.dtype, w.data + n * w_row_bytes, w_row, k));
    }
    ForEachRow(x, [&](int64_t row, int64_t offset) {
      double sum = has_bias ? bias[n] : 0.0;
      for (int64_t i = 0; i < k; ++i) {
        sum += static_cast<double>(xs[offset + i * x_step]) * w_row[i];
      }
      out[row * n_out + n] = static_cast<float>(sum);
    });
  }
  return Ok();
}

}  // namespace kite::ref
