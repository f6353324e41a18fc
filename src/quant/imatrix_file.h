// llama.cpp's importance matrix files, read and written, as Kite's CalibrationStats: the GGUF
// that llama-imatrix writes (general.type "imatrix"; per weight W the tensors "W.in_sum2" F32
// [1, columns], the Σx² over the calibration tokens of the layer's input, and "W.counts" F32
// [1, 1], how many tokens; keys imatrix.datasets, imatrix.chunk_count, imatrix.chunk_size), and
// its legacy .dat format (read only). The importance llama-quantize gives a weight's column j is
// Σx_j² / tokens: ImportanceOf.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "quant/linear_stats.h"

namespace kite {

// What the file says about the calibration besides the statistics.
struct ImatrixInfo {
  std::vector<std::string> datasets;  // calibration files it was computed on
  uint32_t chunk_count = 0;
  uint32_t chunk_size = 0;
};

// The GGUF form: the linears of `stats` (sum_sq, rows_seen) that saw at least one token, sorted by
// name as llama-imatrix writes them; atomic; `inputs` (e.g. the model) are never overwritten.
Status WriteImatrixGguf(const CalibrationStats& stats, const ImatrixInfo& info,
                        const std::string& path, const std::vector<std::string>& inputs = {});

// The GGUF form into stats.linears (columns, sum_sq, rows_seen) and `info` (if given).
// InvalidInput naming the file and the tensor for an incomplete pair, a tensor of another type,
// a value that is not finite and >= 0, or more than one matrix per weight (a mixture of experts:
// Kite has no such models).
Result<CalibrationStats> ReadImatrixGguf(const std::string& path, ImatrixInfo* info = nullptr);

// Either form, told apart by the GGUF magic (the legacy .dat: rows_seen is its call count and
// sum_sq its values, whose ratio is the importance, as llama-quantize reads it).
Result<CalibrationStats> ReadImatrix(const std::string& path, ImatrixInfo* info = nullptr);

// Σx² / tokens per column (llama-quantize's importance); all ones when no token was seen.
std::vector<float> ImportanceOf(const LinearInputStats& stats);

}  // namespace kite
