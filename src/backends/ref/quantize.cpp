// quantize and dequantize (ops.h), element by element with each element's own scale and offset
// (ScaleOffsetAt: per-tensor or per-axis alike), reading strided inputs.
#include <cstdint>

#include "backends/ref/kernels.h"
#include "backends/ref/walk.h"

namespace kite::ref {

namespace {

int32_t ReadInteger(DType dtype, const std::byte* data, int64_t offset) {
  switch (dtype) {
    case DType::kU8:
      return reinterpret_cast<const uint8_t*>(data)[offset];
    case DType::kI8:
      return reinterpret_cast<const int8_t*>(data)[offset];
    case DType::kU16:
      return reinterpret_cast<const uint16_t*>(data)[offset];
    default:
      return reinterpret_cast<const int16_t*>(data)[offset];  // i16 (the rule checked it)
  }
}

void WriteInteger(DType dtype, std::byte* data, int64_t index, int32_t q) {
  switch (dtype) {
    case DType::kU8:
      reinterpret_cast<uint8_t*>(data)[index] = static_cast<uint8_t>(q);
      break;
    case DType::kI8:
      reinterpret_cast<int8_t*>(data)[index] = static_cast<int8_t>(q);
      break;
    case DType::kU16:
      reinterpret_cast<uint16_t*>(data)[index] = static_cast<uint16_t>(q);
      break;
    default:
      reinterpret_cast<int16_t*>(data)[index] = static_cast<int16_t>(q);
      break;
  }
}

}  // namespace

Status Run(const QuantizeAttrs& attrs, const KernelArgs& args) {
  const TensorArg& x = args.in[0];
  const float* src = x.as<const float>();
  const int rank = static_cast<int>(x.shape.size());
  const QuantEncoding& e = attrs.encoding;
  const int32_t q_min = e.q_min(), q_max = e.q_max();
  int64_t i = 0;
  ForEachIndex(x.shape, rank, [&](const Index& index) {
    const ScaleOffset so = ScaleOffsetAt(e, x.shape, i);
    const float value = src[OffsetOf(x, index, rank)];
    WriteInteger(args.out.dtype, args.out.data, i,
                 QuantizeValue(value, so.scale, so.offset, q_min, q_max));
    ++i;
  });
  return Ok();
}

Status Run(const DequantizeAttrs& attrs, const KernelArgs& args) {
  const TensorArg& q = args.in[0];
  float* dst = args.out.as<float>();
  const int rank = static_cast<int>(q.shape.size());
  int64_t i = 0;
  ForEachIndex(q.shape, rank, [&](const Index& index) {
    const ScaleOffset so = ScaleOffsetAt(attrs.encoding, q.shape, i);
    dst[i] = DequantizeValue(ReadInteger(q.dtype, q.data, OffsetOf(q, index, rank)), so.scale,
                             so.offset);
    ++i;
  });
  return Ok();
}

}  // namespace kite::ref
