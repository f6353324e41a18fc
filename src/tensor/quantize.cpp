#include "tensor/quantize.h"

#include <cmath>
#include <string>

#include "tensor/dtype_row.h"

namespace kite {

namespace {

constexpr float kF16Max = 65504.0f;

// Block quantizers cast scaled values to integers (undefined for NaN and infinity) and most
// store their scales as F16, so their input is checked once up front: the index of the first
// element they cannot take, or -1.
int64_t FirstUnquantizable(const DTypeRow& row, const float* src, int64_t n) {
  if (row.quantize_input == QuantizeInput::kAny) return -1;
  const bool f16_scales = row.quantize_input == QuantizeInput::kF16Range;
  for (int64_t i = 0; i < n; ++i) {
    if (!std::isfinite(src[i]) || (f16_scales && std::fabs(src[i]) > kF16Max)) return i;
  }
  return -1;
}

std::string Expected(const DTypeRow& row) {
  return row.quantize_input == QuantizeInput::kF16Range
             ? ", expected a finite value within the f16 range ±65504"
             : ", expected a finite value";
}

std::string TypeName(const DTypeRow* row, DType dtype) {
  return row != nullptr ? std::string(row->name)
                        : "type id " + std::to_string(static_cast<uint32_t>(dtype));
}

}  // namespace

Status Quantize(DType dtype, const float* src, void* dst, int64_t n) {
  const DTypeRow* row = FindRow(dtype);
  if (row == nullptr || row->quantize == nullptr) {
    return Unsupported("quantize: " + TypeName(row, dtype) + " is not a type Kite can write");
  }
  if (n < 0 || n % row->block_size != 0) {
    return InvalidInput("quantize: " + std::to_string(n) + " " + std::string(row->name) +
                        " elements is not a whole number of blocks of " +
                        std::to_string(row->block_size));
  }
  if (n > 0 && (src == nullptr || dst == nullptr)) {
    return InvalidInput("quantize: null buffer for " + std::to_string(n) + " elements");
  }
  if (const int64_t bad = FirstUnquantizable(*row, src, n); bad >= 0) {
    return InvalidInput("quantize " + std::string(row->name) + ": element " + std::to_string(bad) +
                        " is " + std::to_string(src[bad]) + Expected(*row));
  }
  row->quantize(src, dst, n);
  return Ok();
}

Status QuantizeRows(DType dtype, const float* src, void* dst, int64_t rows, int64_t n_per_row,
                    const float* importance) {
  const DTypeRow* row = FindRow(dtype);
  if (row == nullptr || row->quantize_search == nullptr) {
    return Unsupported("quantize rows: " + TypeName(row, dtype) +
                       " has no llama.cpp-compatible quantizer in Kite");
  }
  if (rows < 0 || n_per_row < 0 || n_per_row % row->block_size != 0) {
    return InvalidInput("quantize rows: " + std::to_string(rows) + " rows of " +
                        std::to_string(n_per_row) + " " + std::string(row->name) +
                        " elements: expected a row length that is a whole number of blocks of " +
                        std::to_string(row->block_size));
  }
  if (rows == 0 || n_per_row == 0) return Ok();
  if (src == nullptr || dst == nullptr) {
    return InvalidInput("quantize rows: null buffer for " + std::to_string(rows) + " rows");
  }
  if (importance != nullptr) {
    for (int64_t j = 0; j < n_per_row; ++j) {
      if (!std::isfinite(importance[j]) || importance[j] < 0) {
        return InvalidInput("quantize rows " + std::string(row->name) + ": importance of column " +
                            std::to_string(j) + " is " + std::to_string(importance[j]) +
                            ", expected a finite value >= 0");
      }
    }
  }
  const auto row_bytes = static_cast<int64_t>(KITE_TRY(BytesFor(dtype, n_per_row)));
  for (int64_t r = 0; r < rows; ++r) {
    const float* x = src + r * n_per_row;
    if (const int64_t bad = FirstUnquantizable(*row, x, n_per_row); bad >= 0) {
      return InvalidInput("quantize rows " + std::string(row->name) + ": row " +
                          std::to_string(r) + ", column " + std::to_string(bad) + " is " +
                          std::to_string(x[bad]) + Expected(*row));
    }
  }
  for (int64_t r = 0; r < rows; ++r) {
    row->quantize_search(src + r * n_per_row, static_cast<uint8_t*>(dst) + r * row_bytes,
                         n_per_row, importance);
  }
  return Ok();
}

}  // namespace kite
