// llama.cpp's importance matrix files (llama-imatrix's output, llama-quantize's --imatrix): per
// matmul weight, Σ x² over the tokens for each input column and how many tokens that was.
//
// The GGUF form (llama.cpp's tools/imatrix since mid-2025): general.type = "imatrix",
// imatrix.datasets (string array: the calibration files), imatrix.chunk_count and
// imatrix.chunk_size (u32: windows of chunk_size tokens run), and per weight two f32 tensors,
// "<weight>.in_sum2" (ggml ne = [columns, 1]: Kite's shape [1, columns]) and "<weight>.counts"
// ([1, 1]: the tokens), tensors sorted by name. A weight's importance vector is in_sum2 / counts.
//
//   KITE_RETURN_IF_ERROR(WriteImatrixGguf(stats, {.datasets = {"kjv.txt"}, .chunk_count = 32,
//                                                .chunk_size = 512}, "imatrix.gguf", {model}));
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "quant/linear_stats.h"

namespace kite {

struct ImatrixInfo {
  std::vector<std::string> datasets = {};
  uint32_t chunk_count = 0;
  uint32_t chunk_size = 0;
};

// Writes the linears of `stats` (sum_sq, rows_seen) that saw at least one token, atomically,
// refusing to overwrite any of `inputs`.
Status WriteImatrixGguf(const CalibrationStats& stats, const ImatrixInfo& info,
                        const std::string& path, const std::vector<std::string>& inputs = {});

// Reads an imatrix GGUF into stats.linears (columns, sum_sq, rows_seen; the other fields left
// empty) and its metadata into `info` (if given). InvalidInput naming the file and the tensor
// when a pair is incomplete, shaped or typed otherwise, or not finite.
Result<CalibrationStats> ReadImatrixGguf(const std::string& path, ImatrixInfo* info = nullptr);

}  // namespace kite
