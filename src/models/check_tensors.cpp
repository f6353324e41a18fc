#include "models/check_tensors.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <span>
#include <string>
#include <vector>

#include "tensor/dequantize.h"

namespace kite {

namespace {

// Elements dequantized per chunk of work handed to a thread.
constexpr int64_t kChunkElements = 1 << 16;

// Index of the first element of `row` that is NaN or infinite, or -1.
int64_t FirstNonFinite(std::span<const float> row) {
  const auto it = std::find_if(row.begin(), row.end(), [](float v) { return !std::isfinite(v); });
  return it == row.end() ? -1 : it - row.begin();
}

bool IsInteger(DType dtype) {
  return dtype == DType::kI8 || dtype == DType::kI16 || dtype == DType::kI32 ||
         dtype == DType::kI64;
}

}  // namespace

Status CheckTensorsFinite(const WeightStore& weights, const std::string& source,
                          const Model::FileNames& file_name, ThreadPool* pool) {
  for (const auto& [name, view] : weights.weights()) {
    const std::string what = source + ": tensor '" + (file_name ? file_name(name) : name) + "'";
    if (IsInteger(view.dtype)) continue;
    if (!Traits(view.dtype).can_dequantize) {
      return Unsupported(what + " is " + std::string(DTypeName(view.dtype)) +
                         ", which --check-tensors cannot decode");
    }
    const int64_t columns = view.shape.empty() ? 1 : view.shape.back();
    const uint64_t elements = KITE_TRY(ElementCount(view.shape));
    if (columns <= 0 || elements == 0) continue;
    const int64_t rows = static_cast<int64_t>(elements) / columns;
    // A whole number of blocks per row (else an error here), so Dequantize below cannot fail:
    // the type was checked above.
    const uint64_t row_bytes = KITE_TRY(BytesFor(view.dtype, columns));
    const auto* bytes = static_cast<const uint8_t*>(view.data);

    std::atomic<int64_t> first_bad_row{rows};
    const auto scan = [&](int64_t begin, int64_t end) {
      std::vector<float> row(columns);  // [columns]
      for (int64_t r = begin; r < end && r < first_bad_row.load(std::memory_order_relaxed); ++r) {
        (void)Dequantize(view.dtype, bytes + r * row_bytes, row.data(), columns);
        if (FirstNonFinite(row) < 0) continue;
        int64_t seen = first_bad_row.load(std::memory_order_relaxed);
        while (r < seen && !first_bad_row.compare_exchange_weak(seen, r)) {
        }
        return;
      }
    };
    if (pool != nullptr) {
      pool->ParallelForChunks(rows, std::max<int64_t>(1, kChunkElements / columns), scan);
    } else {
      scan(0, rows);
    }
    const int64_t bad_row = first_bad_row.load();
    if (bad_row == rows) continue;

    std::vector<float> row(columns);  // [columns]
    (void)Dequantize(view.dtype, bytes + bad_row * row_bytes, row.data(), columns);
    const int64_t column = FirstNonFinite(row);
    return InvalidInput(what + " " + ShapeString(view.shape) + " " +
                        std::string(DTypeName(view.dtype)) + " holds " +
                        std::to_string(row[column]) + " at element " +
                        std::to_string(bad_row * columns + column) + " (row " +
                        std::to_string(bad_row) + ", column " + std::to_string(column) + ")");
  }
  return Ok();
}

}  // namespace kite
