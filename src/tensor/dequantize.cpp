#include "tensor/dequantize.h"

#include <string>

#include "tensor/dtype_row.h"

namespace kite {

namespace {

std::string TypeName(DType dtype) {
  const DTypeRow* row = FindRow(dtype);
  return row != nullptr ? std::string(row->name)
                        : "type id " + std::to_string(static_cast<uint32_t>(dtype));
}

}  // namespace

Status Dequantize(DType dtype, const void* src, float* dst, int64_t n) {
  const DTypeRow* row = FindRow(dtype);
  if (row == nullptr || row->dequantize == nullptr) {
    return Unsupported("dequantize: " + TypeName(dtype) + " cannot be converted to f32");
  }
  if (n < 0 || n % row->block_size != 0) {
    return InvalidInput("dequantize: " + std::to_string(n) + " " + std::string(row->name) +
                        " elements is not a whole number of blocks of " +
                        std::to_string(row->block_size));
  }
  if (n > 0 && (src == nullptr || dst == nullptr)) {
    return InvalidInput("dequantize: null buffer for " + std::to_string(n) + " elements");
  }
  row->dequantize(src, dst, n);
  return Ok();
}

}  // namespace kite
