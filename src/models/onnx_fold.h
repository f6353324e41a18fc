// Constant folding and shape inference over an ONNX graph whose symbolic sizes are bound to
// probe values (models/onnx_import.cpp binds batch 1, a few tokens, a short past). Every value
// gets a concrete shape; a value that depends only on initializers, shapes and the bound input
// data (attention_mask, position_ids) also gets its elements. What is left unknown is the model's
// computation on the token ids and the past keys/values: that part the pattern matchers
// (models/onnx_patterns.h) map onto Kite's ops, and the folded constants (RoPE tables, the
// causal mask, eps, scales) are what they check.
//
// Elements are held as doubles and rounded to the value's type after each op (FLOAT rounds to
// float, integer types truncate as ONNX does), which reproduces an f32 runtime's folding of these
// small tensors. Weights (large initializers) are never read here.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "format/onnx_file.h"

namespace kite {

// Elements of a shape, saturating at 2^62 (a broken file's shapes must not overflow; counts are
// only compared with limits).
int64_t OnnxElementCount(std::span<const int64_t> shape);

struct OnnxValue {
  OnnxType type = OnnxType::kUndefined;
  bool shape_known = false;
  std::vector<int64_t> shape;
  // Elements, when the value is a folded constant (row-major).
  std::optional<std::vector<double>> data;
  // An initializer too large to fold: constant, but its elements stay in the file.
  const OnnxTensor* weight = nullptr;

  int64_t count() const;
  bool constant() const { return data.has_value() || weight != nullptr; }
  // The single element of a folded scalar (or one-element tensor).
  std::optional<double> Scalar() const;
};

struct FoldedGraph {
  std::map<std::string, OnnxValue, std::less<>> values;
  // Node index -> why its outputs' shapes could not be inferred (an op Kite does not know, a
  // shape that does not broadcast, ...).
  std::map<size_t, std::string> unknown;
  // Output name -> index of the node producing it.
  std::map<std::string, size_t, std::less<>> producer;
  // Value name -> indices of the nodes reading it.
  std::map<std::string, std::vector<size_t>, std::less<>> consumers;
  // Whether a node's outputs were all folded to constants.
  std::vector<bool> folded;

  const OnnxValue* Find(std::string_view name) const;
};

// Initializers at or below this many elements are folded with the rest; larger ones are weights.
inline constexpr int64_t kMaxFoldElements = int64_t{1} << 20;
// A larger initializer is read whole only for a Gather or Slice of a few rows of it with folded
// indices (Llama 3's cos/sin caches: 131072 positions x 128), and only while that node folds.
inline constexpr int64_t kMaxTableElements = int64_t{1} << 25;

// An initializer or a Constant node's tensor as a value: folded when small, else a weight.
OnnxValue ConstantValue(const OnnxTensor& tensor);

// `inputs`: every graph input (not an initializer) with its bound shape, and data where bound.
FoldedGraph FoldOnnxGraph(const OnnxModel& model, std::map<std::string, OnnxValue> inputs);

// One op: fills `outputs` (already sized to the node's outputs) from `inputs` (nullptr for an
// omitted optional input). An error says why the output shape cannot be known. Defined in
// models/onnx_ops*.cpp, dispatched by op type.
Status EvaluateOnnxNode(const OnnxModel& model, const OnnxNode& node,
                        std::span<const OnnxValue* const> inputs, std::span<OnnxValue> outputs);

}  // namespace kite
