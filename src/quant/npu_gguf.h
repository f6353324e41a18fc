// The write side of encoded weights in GGUF (docs/quantized_gguf.md, "Weights"): a weight that
// an NPU-layout quantizer made (quant/npu_weights.h) becomes plain tensors any GGUF reader
// opens — its codes as i8 (4-bit codes two a byte), "<name>.scale" f32, "<name>.offset" i32
// (asymmetric), "<name>.lpbq_mult" i8 (LPBQ) — and kite.weight_encoding.<name>.* keys saying
// what they hold. models/load_gguf.cpp reads them back (models/encoded_weight_gguf.h).
//
//   GgufWriter metadata;  std::vector<StreamedTensor> tensors;
//   auto q = std::make_shared<const QuantizedTensor>(KITE_TRY(QuantizeNpuWeight(...)));
//   KITE_RETURN_IF_ERROR(AddNpuWeight(q, &metadata, &tensors));
//   KITE_RETURN_IF_ERROR(WriteGgufStreaming(metadata, tensors, out, inputs));
#pragma once

#include <memory>
#include <vector>

#include "base/status.h"
#include "export/gguf_stream.h"
#include "format/gguf.h"
#include "quant/quantized_tensor.h"

namespace kite {

// Appends the tensors of `weight` (which must carry an encoding valid for its shape and dtype)
// to `tensors`, their fills reading `weight`'s bytes (kept alive by the fills), and sets its
// keys and the format version key in `metadata`. InvalidInput naming the tensor otherwise.
Status AddNpuWeight(std::shared_ptr<const QuantizedTensor> weight, GgufWriter* metadata,
                    std::vector<StreamedTensor>* tensors);

}  // namespace kite
