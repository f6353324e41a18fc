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

struct ImatrixFile {
  CalibrationStats stats;             // linears: columns, rows_seen, sum_sq
  std::vector<std::string> datasets;  // calibration files it was computed on
  int32_t chunk_count = 0;
  int32_t chunk_size = 0;
};

// Either format, told apart by the GGUF magic. Errors name the file and the entry. Mixture-of-
// experts entries (more than one matrix per weight) are refused: Kite has no such models.
Result<ImatrixFile> ReadImatrix(const std::string& path);

// The GGUF format, entries sorted by name as llama-imatrix writes them; atomic; `inputs` (e.g.
// the model) are never overwritten. Every linear needs sum_sq of `columns` values.
Status WriteImatrix(const ImatrixFile& imatrix, const std::string& path,
                    const std::vector<std::string>& inputs = {});

// Σx² / tokens per column (llama-quantize's importance); all ones when no token was seen.
std::vector<float> ImportanceOf(const LinearInputStats& stats);

}  // namespace kite
