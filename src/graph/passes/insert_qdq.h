// insert_qdq: static activation quantization as an NPU runs it, simulated in float (AIMET's
// quantsim): after every node named in the table, a quantize to the table's encoding and a
// dequantize back, so every reader of the node's output sees what the integer hardware would
// hold there — the value rounded to the encoding's grid and clamped to its range:
//
//   blk.0.attn_norm  ->  blk.0.attn_norm -> blk.0.attn_norm.quantize (u16)
//                                        -> blk.0.attn_norm.dequantize (f32) -> the readers
//
// The table names activations (node outputs, f32); Kite's quantize driver puts one at every
// activation an NPU quantizes: the embedding, norm outputs, matmul outputs (q, k, v, o, gate, up,
// down, the logits), RoPE outputs (the k entering the KV cache), attention outputs, the SwiGLU
// output and the residual adds (quant/activation_encodings.h). A graph output keeps its place:
// the dequantized value becomes the output. Every entry must name a node of the graph that is
// not a view and outputs f32 (InvalidInput naming it otherwise), so a table meant for another
// model is never half applied.
#pragma once

#include <map>
#include <string>

#include "graph/passes/pass.h"

namespace kite {

class InsertQdq final : public Pass {
 public:
  explicit InsertQdq(std::map<std::string, QuantEncoding> encodings)
      : encodings_(std::move(encodings)) {}

  std::string_view name() const override { return "insert_qdq"; }
  Result<PassOutcome> Run(const Graph& graph) override;

 private:
  std::map<std::string, QuantEncoding> encodings_;
};

}  // namespace kite
