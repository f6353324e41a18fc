// Pattern matchers over a folded ONNX graph (models/onnx_fold.h): each recognises one of the
// decomposed forms exporters write for an op Kite has whole (RMSNorm, rotate-half RoPE, causal
// grouped-query attention, SwiGLU, a linear layer) by walking back from the value it produces,
// checks every folded constant the form depends on (eps, the RoPE tables, the causal mask, the
// attention scale), and takes the nodes it covered, so that what no pattern took can be reported.
// A mismatch is an error naming the node and why.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "format/onnx_file.h"
#include "graph/ops.h"
#include "models/onnx_fold.h"

namespace kite {

// A weight as the file holds it: `initializer`, transposed when the file stores it [in, out]
// (MatMul's B) rather than Kite's [out, in].
struct OnnxWeight {
  std::string initializer;
  bool transpose = false;
  // ONNX Runtime's MatMulNBits: `initializer` holds 4-bit codes [N, K / block, block / 2] (low
  // nibble first, zero point 8) and `scales` one float per block; Kite dequantizes them.
  std::string scales = {};
  int64_t k = 0, n = 0, block = 0;
};

struct OnnxLinear {
  std::string input;
  OnnxWeight weight;
  std::optional<OnnxWeight> bias;
  int64_t in = 0, out = 0;
};

struct OnnxRmsNorm {
  std::string input;
  OnnxWeight weight;
  double eps = 0;
};

struct OnnxAttention {
  std::string input;  // the normed stream q, k and v are projected from
  OnnxLinear q, k, v, o;
  int32_t n_heads = 0, n_kv_heads = 0, head_dim = 0;
  RopeAttrs rope;
  std::string past_key, past_value;        // graph inputs, empty without a KV cache in the graph
  std::string present_key, present_value;  // values the graph outputs as the new cache
};

struct OnnxSwiGlu {
  std::string input;
  OnnxLinear gate, up, down;
};

// Where the probe sizes were bound (models/onnx_import.cpp): positions past .. past + tokens - 1.
struct OnnxProbe {
  int64_t tokens = 0;
  int64_t past = 0;
};

// What one pattern took: the Kite op it became and the ONNX nodes it covers.
struct OnnxFusion {
  std::string kite_op;  // "rms_norm", "attention", ...
  int32_t layer = -1;   // -1 outside the blocks
  std::vector<size_t> nodes;
};

class OnnxMatcher {
 public:
  OnnxMatcher(const OnnxModel& model, const FoldedGraph& graph, OnnxProbe probe);

  // The value under Identity, same-type Casts and whole Slices (taken as part of the current
  // pattern).
  std::string Through(std::string_view value);
  // The live node producing `value` (after Through), or nullptr for a graph input.
  const OnnxNode* Producer(std::string_view value, size_t* index = nullptr);

  Result<OnnxLinear> Linear(std::string_view value);
  Result<OnnxRmsNorm> RmsNorm(std::string_view value);
  Result<OnnxAttention> Attention(std::string_view value);
  Result<OnnxSwiGlu> SwiGlu(std::string_view value);

  // A pattern's nodes are taken between Begin and Commit; Abandon gives them back (a pattern
  // tried on the other operand of an Add).
  size_t Begin() const { return taken_.size(); }
  void Commit(size_t mark, std::string kite_op, int32_t layer);
  void Abandon(size_t mark) { taken_.resize(mark); }
  void Take(size_t node) { taken_.push_back(node); }

  const std::vector<OnnxFusion>& fusions() const { return fusions_; }
  // Live nodes (not folded away) no committed pattern covers.
  std::vector<size_t> Unmapped() const;

  // "node 'name' (Op): why", as an Unsupported error.
  std::unexpected<Error> Mismatch(size_t node, const std::string& why) const;

 private:
  const OnnxValue* Value(std::string_view name) const { return graph_.Find(name); }
  // A Slice that keeps every element in order: the value itself.
  bool WholeSlice(const OnnxNode& node) const;
  Result<std::string> Rope(std::string_view value, const OnnxNode& at, size_t at_index,
                           int32_t head_dim, RopeAttrs* rope);
  // ONNX Runtime's com.microsoft RotaryEmbedding, its caches checked as the decomposed tables are.
  Result<std::string> OrtRope(const OnnxNode& node, size_t index, int32_t head_dim, RopeAttrs* rope);
  // The caches' rows at the probe's positions, checked as the decomposed form's tables.
  Status CheckRopeCaches(const OnnxValue* cos, const OnnxValue* sin, size_t index,
                         int32_t head_dim, RopeAttrs* rope) const;
  // ONNX Runtime's com.microsoft GroupQueryAttention and the projections feeding it.
  Status OrtGroupQueryAttention(const OnnxNode& node, size_t index, OnnxAttention* out);
  std::string RepeatKv(std::string_view value);
  Status CheckRopeTables(const OnnxValue& cos, const OnnxValue& sin, size_t node,
                         int32_t head_dim, RopeAttrs* rope) const;
  Status CheckCausalMask(const OnnxValue& mask, size_t node) const;

  const OnnxModel& model_;
  const FoldedGraph& graph_;
  OnnxProbe probe_;
  std::vector<size_t> taken_;
  std::vector<OnnxFusion> fusions_;
};

}  // namespace kite
