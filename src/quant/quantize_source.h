// The model `kite quantize` reads, as the driver needs it: the output's metadata, each tensor's
// facts, its float rows, and (GGUF input) its stored bytes, copied as they are when the type
// stays. A Hugging Face folder reads as `kite convert` would write it (export/convert.h).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "export/convert.h"
#include "format/gguf.h"
#include "models/model.h"
#include "quant/tensor_types.h"

namespace kite {

// F32 rows [first, first + rows) of one source tensor into `out` (rows x columns floats).
using ReadRows = std::function<Status(int64_t first, int64_t rows, float* out)>;

// A model as the driver reads it: metadata for the output, and each tensor's facts, float rows
// and (GGUF input) stored bytes, which are copied as they are when the type stays.
struct QuantizeSource {
  std::unique_ptr<Model> model;
  std::shared_ptr<const GgufFile> gguf;
  GgufWriter metadata;
  std::vector<SourceTensorInfo> tensors;
  std::vector<ReadRows> rows;
  std::vector<const uint8_t*> stored;  // nullptr for a folder
  // A folder's q/k rows are written permuted (export/convert.h): what is read from `model`
  // (rotated or replaced weights) is permuted the same way.
  int64_t qk_permute_head_dim = 0;
};

// Whether weight `name`'s rows differ between the model and the file (a folder's q/k).
bool PermutedInFile(const QuantizeSource& source, const std::string& name);

// Packed rows (of `row_bytes`) of weight `name` in the model's layout -> the output file's: q/k
// rows permuted per head when the source is a folder of arch llama (export/convert.h).
void ToFileLayout(const QuantizeSource& source, const std::string& name, std::span<uint8_t> values,
                  size_t row_bytes);

// A folder's tensors, 2-D weights offered as f32 rows, metadata as `kite convert` writes it for
// `file_type`.
Result<QuantizeSource> ReadQuantizeFolder(const std::string& folder, uint32_t file_type);
// A GGUF's tensors and metadata (less the keys that describe the old file).
Result<QuantizeSource> ReadQuantizeGguf(const std::string& path);

}  // namespace kite
