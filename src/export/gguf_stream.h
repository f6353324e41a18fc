// Writes a GGUF file whose tensors are produced one chunk of rows at a time, so that converting
// or synthesizing a model never holds more than one chunk of its weights in memory.
//
//   GgufWriter metadata;                    // keys only: tensors come from `tensors`
//   metadata.SetString("general.architecture", "llama");
//   KITE_RETURN_IF_ERROR(WriteGgufStreaming(metadata, tensors, "out.gguf", {"in/"}, progress));
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "format/gguf.h"
#include "tensor/dtype.h"

namespace kite {

// A tensor to be written: its rows (all dimensions but the innermost) are filled on demand.
struct StreamedTensor {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;  // outermost first, as GgufTensorInfo
  // Writes rows [first_row, first_row + rows) as `dtype` bytes into `out`, which holds exactly
  // that many rows.
  std::function<Status(int64_t first_row, int64_t rows, std::span<uint8_t> out)> fill;
};

// Called after each chunk: bytes of tensor data written so far and in all.
using WriteProgress = std::function<void(uint64_t done, uint64_t total)>;

// Writes `metadata`'s keys and `tensors` (in order) to `path` as GGUF v3 with the writer's
// alignment. The layout is GgufWriter's own (the header is written by it with zero-filled
// tensors, then each tensor's bytes are filled in place), so the file reads back as any file
// GgufWriter writes. It is written as AtomicOutput writes: `path` is replaced only when the whole
// file is written, and refused when it is not a regular file or is one of `inputs` (the files or
// model folders the tensors are read from).
Status WriteGgufStreaming(const GgufWriter& metadata, const std::vector<StreamedTensor>& tensors,
                          const std::string& path, const std::vector<std::string>& inputs,
                          const WriteProgress& progress = nullptr);

// The size in bytes of the file WriteGgufStreaming writes for `metadata` and `tensors` (their
// fill is not called): a dry run's exact figure.
Result<uint64_t> StreamedGgufSize(const GgufWriter& metadata,
                                  const std::vector<StreamedTensor>& tensors);

}  // namespace kite
