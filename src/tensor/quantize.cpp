#include "tensor/quantize.h"

#include <cmath>
#include <string>

#include "tensor/dtype_row.h"

namespace kite {

namespace {

constexpr float kF16Max = 65504.0f;

// Block quantizers cast scaled values to integers (undefined for NaN and infinity) and most
// store their scales as F16, so their input is checked once up front.
Status CheckQuantizable(const DTypeRow& row, const float* src, int64_t n) {
  if (row.quantize_input == QuantizeInput::kAny) return Ok();
  const bool f16_scales = row.quantize_input == QuantizeInput::kF16Range;
  for (int64_t i = 0; i < n; ++i) {
    if (!std::isfinite(src[i]) || (f16_scales && std::fabs(src[i]) > kF16Max)) {
      return InvalidInput("quantize " + std::string(row.name) + ": element " + std::to_string(i) +
                          " is " + std::to_string(src[i]) +
                          (f16_scales ? ", expected a finite value within the f16 range ±65504"
                                      : ", expected a finite value"));
    }
  }
  return Ok();
}

}  // namespace

Status Quantize(DType dtype, const float* src, void* dst, int64_t n) {
  const DTypeRow* row = FindRow(dtype);
  if (row == nullptr || row->quantize == nullptr) {
    return Unsupported("quantize: " +
                       (row != nullptr
                            ? std::string(row->name)
                            : "type id " + std::to_string(static_cast<uint32_t>(dtype))) +
                       " is not a type Kite can write");
  }
  if (n < 0 || n % row->block_size != 0) {
    return InvalidInput("quantize: " + std::to_string(n) + " " + std::string(row->name) +
                        " elements is not a whole number of blocks of " +
                        std::to_string(row->block_size));
  }
  if (n > 0 && (src == nullptr || dst == nullptr)) {
    return InvalidInput("quantize: null buffer for " + std::to_string(n) + " elements");
  }
  KITE_RETURN_IF_ERROR(CheckQuantizable(*row, src, n));
  row->quantize(src, dst, n);
  return Ok();
}

}  // namespace kite
