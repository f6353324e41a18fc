// Static activation encodings in a GGUF file (docs/quantized_gguf.md, "Activation encodings"):
// kite.activations.* keys beside the model's own, so any GGUF reader still opens the file and
// Kite's loader puts the table in ModelConfig::activation_encodings (the Engine then runs the
// quantized activations, graph/passes/insert_qdq.h).
//
//   kite.activations.version   u32 = 1
//   kite.activations.method    string: how they were chosen ("minmax", "percentile:99.99", ...)
//   kite.activations.bits      u32: the activations' width (8 or 16)
//   kite.activations.kv_bits   u32: the width of the k and v entering the KV cache
//   kite.activations.names     [string]: node names ("blk.0.attn_norm", ...)
//   kite.activations.bitwidths [u32]: per name, 8 or 16
//   kite.activations.scales    [f32]: per name, > 0 and finite
//   kite.activations.offsets   [i32]: per name, in [-(2^bits - 1), 0]
// Each name's encoding is per-tensor, unsigned: real = scale · (q + offset).
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "base/status.h"
#include "format/gguf.h"
#include "graph/encoding.h"

namespace kite {

struct ActivationEncodingKeys {
  std::map<std::string, QuantEncoding> by_node;
  int32_t bits = 0;
  int32_t kv_bits = 0;
  std::string method;
};

// InvalidInput when an encoding is not per-tensor, unsigned, 8 or 16 bits.
Status WriteActivationEncodingKeys(const ActivationEncodingKeys& keys, GgufWriter& writer);

// The table of the file; empty by_node when it has none. InvalidInput naming the file and the
// key when the arrays disagree in length or hold a value out of range, Unsupported for a
// version other than 1.
Result<ActivationEncodingKeys> ReadActivationEncodingKeys(const GgufFile& gguf);

}  // namespace kite
