// `--check-tensors`: every weight of a model scanned for NaN and infinity before it runs, so that
// a damaged or badly converted file is named at load instead of surfacing as `perplexity nan` or
// garbage text. Quantized types are dequantized one row at a time (nothing the size of a tensor
// is allocated); rows are spread over a thread pool when one is given.
#pragma once

#include "base/status.h"
#include "base/thread_pool.h"
#include "models/model.h"
#include "tensor/weight_store.h"

namespace kite {

// InvalidInput naming `source`, the first tensor (in name order, as the file spells it:
// `file_name`, or the store's name when that is empty) holding a value that is not finite, the
// element's flat index and the value. Unsupported for a floating type Kite cannot dequantize.
// Integer tensors are skipped (always finite). `pool` may be nullptr.
Status CheckTensorsFinite(const WeightStore& weights, const std::string& source,
                          const Model::FileNames& file_name, ThreadPool* pool);
// The same for a loaded model's weights.
inline Status CheckTensorsFinite(const Model& model, ThreadPool* pool) {
  return CheckTensorsFinite(model.weights(), model.config().source,
                            [&](const std::string& name) { return model.FileName(name); }, pool);
}

}  // namespace kite
