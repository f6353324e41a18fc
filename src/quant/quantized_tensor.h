// One weight as a quantizer leaves it, ready to be written to a GGUF file: its bytes in a
// ggml type (q4_K, iq4_nl, ...) or, for the NPU-style layouts, integer codes with the
// encoding that says what they mean (graph/encoding.h) — see docs/quantized_gguf.md for how
// such a weight is stored in a file.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "graph/encoding.h"
#include "tensor/dtype.h"

namespace kite {

struct QuantizedTensor {
  std::string name;            // canonical (llama.cpp GGUF) name: "blk.0.attn_q.weight"
  DType dtype = DType::kF32;   // of `bytes`
  std::vector<int64_t> shape;  // outermost first
  std::vector<uint8_t> bytes;  // BytesFor(dtype, elements)
  std::optional<QuantEncoding> encoding;  // NPU-style layouts only
};

}  // namespace kite
