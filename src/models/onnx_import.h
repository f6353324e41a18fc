// ONNX import: a decoder-only transformer exported to ONNX (torch.onnx.export, Hugging Face
// Optimum, ONNX Runtime GenAI's layout with its com.microsoft ops; opset 13-17; with or without
// past_key_values inputs) recognised as the Llama family and loaded as Kite's Llama model, its
// weights under canonical names.
//
// How: the graph's symbolic sizes are bound to a small probe (batch 1, 3 tokens, 1 past position
// when the graph has a KV cache; attention_mask all ones, position_ids counting on from the
// past), everything that then depends only on constants is folded (models/onnx_fold.h), and the
// rest is walked back from the logits by the pattern matchers (models/onnx_patterns.h): the
// lm_head, the final RMSNorm, per block a residual SwiGLU MLP behind an RMSNorm and a residual
// causal GQA attention with rotate-half RoPE behind another, down to the embedding Gather. The
// explicit KV inputs and outputs become Kite's paged KV cache (the attention op owns it). A node
// no pattern covers is an error listing it with its op and why; nothing is guessed.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "format/onnx_file.h"
#include "models/model.h"
#include "models/onnx_patterns.h"

namespace kite {

struct OnnxImport {
  ModelConfig config;
  // Canonical weight name -> where the file holds it.
  std::vector<std::pair<std::string, OnnxWeight>> weights;
  // What each recognised pattern fused, in graph order; layers numbered from 0.
  std::vector<OnnxFusion> fusions;
  int64_t folded_nodes = 0;
  // The graph inputs that were Kite's KV cache (past_key_values.*) and the probe bindings.
  std::vector<std::string> kv_inputs;
  std::vector<std::string> bindings;  // "sequence_length = 3", ...
  // Live nodes no pattern covered, each with why ("node 'x' (Op): ..."). Non-empty: refused.
  std::vector<std::string> unmapped;
  // Why the recognition stopped (empty when it did not).
  std::string error;
};

// Recognition only (no weight is read): what `kite inspect model.onnx --placement` prints.
// An error only for a file that is not ONNX at all or has inputs Kite cannot bind.
Result<OnnxImport> RecognizeOnnx(const OnnxModel& model);

// The whole import: recognition, then the weights into a WeightStore (MatMul weights transposed
// to Kite's [out, in], each file copy released once transposed) and the Llama model over them.
// Hyper-parameters the graph does not hold (the context length, EOS ids) come from a
// config.json beside the file when there is one.
Result<std::unique_ptr<Model>> LoadOnnxModel(const std::string& path);

}  // namespace kite
