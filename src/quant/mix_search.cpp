#include "quant/mix_search.h"

#include <algorithm>

#include "quant/quantize_model.h"
#include "tensor/dequantize.h"
#include "tensor/dtype_row.h"

namespace kite {

std::vector<DType> MixCandidateTypes(int64_t columns) {
  std::vector<DType> types;
  for (DType dtype : {DType::kQ2_K, DType::kQ3_K, DType::kQ4_0, DType::kQ4_K, DType::kQ4_1,
                      DType::kQ5_0, DType::kQ5_K, DType::kQ5_1, DType::kQ6_K, DType::kQ8_0}) {
    const DTypeRow* row = FindRow(dtype);
    if (row == nullptr || row->quantize == nullptr || row->dequantize == nullptr) continue;
    if (columns % row->block_size == 0) types.push_back(dtype);
  }
  return types;
}

Result<std::vector<MixCandidate>> MeasureCandidates(const ReadRow& read, int64_t rows,
                                                    int64_t columns, const float* importance,
                                                    std::span<const DType> types,
                                                    int64_t sample_rows) {
  const int64_t samples = std::min(rows, std::max<int64_t>(1, sample_rows));
  std::vector<float> values(static_cast<size_t>(samples * columns));
  for (int64_t s = 0; s < samples; ++s) {
    KITE_RETURN_IF_ERROR(read(s * rows / samples, values.data() + s * columns));
  }
  std::vector<MixCandidate> candidates;
  std::vector<uint8_t> packed;
  std::vector<float> back(values.size());
  for (DType dtype : types) {
    const uint64_t row_bytes = KITE_TRY(BytesFor(dtype, columns));
    packed.resize(row_bytes * samples);
    KITE_RETURN_IF_ERROR(
        QuantizeRowsOf(dtype, values.data(), packed.data(), samples, columns, importance));
    KITE_RETURN_IF_ERROR(Dequantize(dtype, packed.data(), back.data(), samples * columns));
    double error = 0;
    for (int64_t i = 0; i < samples * columns; ++i) {
      const double d = static_cast<double>(values[i]) - back[i];
      error += (importance != nullptr ? importance[i % columns] : 1.0) * d * d;
    }
    candidates.push_back({dtype, row_bytes * static_cast<uint64_t>(rows),
                          error * static_cast<double>(rows) / static_cast<double>(samples)});
  }
  std::sort(candidates.begin(), candidates.end(),
            [](const MixCandidate& a, const MixCandidate& b) { return a.bytes < b.bytes; });
  return candidates;
}

Result<std::vector<size_t>> SolveMix(std::span<const MixTensor> tensors, uint64_t budget,
                                     const std::string& what) {
  std::vector<size_t> choice(tensors.size(), 0);
  uint64_t used = 0;
  for (const MixTensor& tensor : tensors) {
    if (tensor.candidates.empty()) {
      return InvalidInput(what + ": tensor '" + tensor.name + "' can take no quantized type");
    }
    used += tensor.candidates.front().bytes;
  }
  if (used > budget) {
    return InvalidInput(what + ": infeasible: the weights it chooses types for need at least " +
                        std::to_string(used) +
                        " bytes in the smallest types their rows can take, the target leaves " +
                        std::to_string(budget) + " bytes for them");
  }
  // Greedy upgrades by error saved per byte; ties go to the earlier tensor and cheaper type, so
  // the result does not depend on anything but the measurements.
  while (true) {
    double best_gain = 0;
    size_t best_tensor = tensors.size(), best_candidate = 0;
    for (size_t t = 0; t < tensors.size(); ++t) {
      const MixCandidate& now = tensors[t].candidates[choice[t]];
      for (size_t c = choice[t] + 1; c < tensors[t].candidates.size(); ++c) {
        const MixCandidate& next = tensors[t].candidates[c];
        if (next.bytes <= now.bytes || next.error >= now.error) continue;
        if (used - now.bytes + next.bytes > budget) continue;
        const double gain = (now.error - next.error) / static_cast<double>(next.bytes - now.bytes);
        if (gain > best_gain) {
          best_gain = gain;
          best_tensor = t;
          best_candidate = c;
        }
      }
    }
    if (best_tensor == tensors.size()) break;
    used = used - tensors[best_tensor].candidates[choice[best_tensor]].bytes +
           tensors[best_tensor].candidates[best_candidate].bytes;
    choice[best_tensor] = best_candidate;
  }
  return choice;
}

}  // namespace kite
