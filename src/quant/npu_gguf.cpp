#include "quant/npu_gguf.h"

#include <cstring>
#include <string>

#include "models/encoded_weight_gguf.h"

namespace kite {

namespace {

// A tensor whose rows are copied from `bytes` (kept alive by `owner`), rows of `row_bytes`.
StreamedTensor CopiedTensor(std::string name, DType dtype, std::vector<int64_t> shape,
                            std::shared_ptr<const void> owner, const void* bytes,
                            int64_t row_bytes) {
  StreamedTensor t;
  t.name = std::move(name);
  t.dtype = dtype;
  t.shape = std::move(shape);
  t.fill = [owner = std::move(owner), bytes, row_bytes](int64_t first, int64_t rows,
                                                        std::span<uint8_t> out) -> Status {
    std::memcpy(out.data(), static_cast<const uint8_t*>(bytes) + first * row_bytes,
                static_cast<size_t>(rows * row_bytes));
    return Ok();
  };
  return t;
}

int64_t RowElements(const std::vector<int64_t>& shape) { return shape.empty() ? 1 : shape.back(); }

}  // namespace

Status AddNpuWeight(std::shared_ptr<const QuantizedTensor> weight, GgufWriter* metadata,
                    std::vector<StreamedTensor>* tensors) {
  const QuantizedTensor& w = *weight;
  const std::string what = "tensor '" + w.name + "'";
  if (!w.encoding) return InvalidInput(what + " has no encoding; it is not an NPU-layout weight");
  const QuantEncoding& e = *w.encoding;
  Status valid = ValidateEncoding(e, w.shape, w.dtype);
  if (!valid) return std::unexpected(std::move(valid.error()).WithContext(what));
  if (e.bits != 4 && e.bits != 8) {
    return InvalidInput(what + ": " + std::to_string(e.bits) +
                        "-bit codes; the file format stores 4- and 8-bit weights");
  }
  const uint64_t elements = KITE_TRY(ElementCount(w.shape));
  const uint64_t bytes = KITE_TRY(BytesFor(w.dtype, elements));
  if (w.bytes.size() != bytes) {
    return InvalidInput(what + ": " + std::to_string(w.bytes.size()) + " bytes, expected " +
                        std::to_string(bytes) + " for " + ShapeString(w.shape) + " " +
                        std::string(DTypeName(w.dtype)));
  }

  const std::vector<int64_t> codes_shape = CodesFileShape(w.dtype, w.shape);
  tensors->push_back(CopiedTensor(w.name, DType::kI8, codes_shape, weight, w.bytes.data(),
                                  RowElements(codes_shape)));
  const std::vector<int64_t> scale_shape = ScaleFileShape(e, w.shape);
  tensors->push_back(CopiedTensor(w.name + std::string(kScaleSuffix), DType::kF32, scale_shape,
                                  weight, e.scales.data(), RowElements(scale_shape) * 4));
  if (!e.offsets.empty()) {
    tensors->push_back(CopiedTensor(w.name + std::string(kOffsetSuffix), DType::kI32,
                                    scale_shape, weight, e.offsets.data(),
                                    RowElements(scale_shape) * 4));
  }
  if (e.granularity == EncodingGranularity::kLpbq) {
    const std::vector<int64_t> mult_shape = MultiplierFileShape(e, w.shape);
    tensors->push_back(CopiedTensor(w.name + std::string(kLpbqMultSuffix), DType::kI8,
                                    mult_shape, weight, e.multipliers.data(),
                                    RowElements(mult_shape)));
  }

  metadata->SetUint32(std::string(kQuantizedGgufVersionKey), kQuantizedGgufVersion);
  metadata->SetUint32(WeightEncodingKey(w.name, "bits"), static_cast<uint32_t>(e.bits));
  metadata->SetBool(WeightEncodingKey(w.name, "signed"), e.is_signed);
  metadata->SetString(WeightEncodingKey(w.name, "granularity"),
                      std::string(GranularityKeyName(e.granularity)));
  const bool uses_axis = e.granularity == EncodingGranularity::kPerAxis ||
                         e.granularity == EncodingGranularity::kLpbq;
  const bool uses_blocks = e.granularity == EncodingGranularity::kPerBlock ||
                           e.granularity == EncodingGranularity::kLpbq;
  if (uses_axis) metadata->SetUint32(WeightEncodingKey(w.name, "axis"), e.axis);
  if (uses_blocks) {
    metadata->SetUint32(WeightEncodingKey(w.name, "block_axis"), e.block_axis);
    metadata->SetUint32(WeightEncodingKey(w.name, "block_size"),
                        static_cast<uint32_t>(e.block_size));
  }
  if (e.granularity == EncodingGranularity::kLpbq) {
    metadata->SetUint32(WeightEncodingKey(w.name, "multiplier_bits"), e.multiplier_bits);
  }
  return Ok();
}

}  // namespace kite
