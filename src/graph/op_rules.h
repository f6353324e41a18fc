// Shape and dtype rules, one overload per op, each defined in graph/ops/<op>.cpp. A rule sees the
// node's input values and returns what its output is; its error says what disagrees and names
// the shapes involved (the builder prefixes the node's name and op).
#pragma once

#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "graph/graph.h"

namespace kite {

struct OutputSpec {
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  // Views only: the output's strides and its element offset into the input's memory.
  std::vector<int64_t> strides;
  int64_t view_offset = 0;

  static OutputSpec Of(DType dtype, std::vector<int64_t> shape) {
    OutputSpec spec;
    spec.dtype = dtype;
    spec.shape = std::move(shape);
    return spec;
  }
};

using RuleInputs = std::span<const Value* const>;

Result<OutputSpec> InferOutput(const EmbeddingAttrs& attrs, RuleInputs in);
Result<OutputSpec> InferOutput(const MatMulAttrs& attrs, RuleInputs in);
Result<OutputSpec> InferOutput(const AddAttrs& attrs, RuleInputs in);
Result<OutputSpec> InferOutput(const MulAttrs& attrs, RuleInputs in);
Result<OutputSpec> InferOutput(const RmsNormAttrs& attrs, RuleInputs in);
Result<OutputSpec> InferOutput(const RopeAttrs& attrs, RuleInputs in);
Result<OutputSpec> InferOutput(const AttentionAttrs& attrs, RuleInputs in);
Result<OutputSpec> InferOutput(const SiluAttrs& attrs, RuleInputs in);
Result<OutputSpec> InferOutput(const GeluAttrs& attrs, RuleInputs in);
Result<OutputSpec> InferOutput(const SwiGluAttrs& attrs, RuleInputs in);
Result<OutputSpec> InferOutput(const GeGluAttrs& attrs, RuleInputs in);
Result<OutputSpec> InferOutput(const SoftcapAttrs& attrs, RuleInputs in);
Result<OutputSpec> InferOutput(const SoftmaxAttrs& attrs, RuleInputs in);
Result<OutputSpec> InferOutput(const QuantizeAttrs& attrs, RuleInputs in);
Result<OutputSpec> InferOutput(const DequantizeAttrs& attrs, RuleInputs in);
Result<OutputSpec> InferOutput(const ReshapeAttrs& attrs, RuleInputs in);
Result<OutputSpec> InferOutput(const PermuteAttrs& attrs, RuleInputs in);
Result<OutputSpec> InferOutput(const SliceAttrs& attrs, RuleInputs in);

// Helpers shared by the rules.
namespace rules {

// "x [13, 64] f32"
std::string Describe(std::string_view role, const Value& value);
Status ExpectInputs(RuleInputs in, size_t count, std::string_view roles);
Status ExpectDType(std::string_view role, const Value& value, DType dtype);
Status ExpectRank(std::string_view role, const Value& value, size_t rank);
// An activation an op reads: f32, or integers (i8, u8, i16, u16) that carry a quantization
// encoding saying what they mean (graph/encoding.h); the op computes on the real values and its
// output is f32 unless the node is given an output encoding. An integer value without an
// encoding is refused, by name: its numbers have no meaning.
Status ExpectActivation(std::string_view role, const Value& value);
// A float dtype stored one element at a time (f32, f16, bf16).
Status ExpectPlainFloat(std::string_view role, const Value& value);
// A weight-like operand read whole rows at a time: contiguous, rows a whole number of blocks.
// (Whether a dtype can be read at all is each backend's call, in Supports.)
Status ExpectWholeBlockRows(std::string_view role, const Value& value);
// Element-wise unary: one activation input (ExpectActivation), f32 output of the same shape.
Result<OutputSpec> SameShapeAsActivation(RuleInputs in);

}  // namespace rules
}  // namespace kite
