// Shape rules of quantize and dequantize (ops.h): same shape in and out; the encoding must fit
// the shape, and a dequantize's input must carry exactly the encoding its attributes name.
#include "graph/op_rules.h"

namespace kite {

namespace {

Status CheckActivationEncoding(std::string_view role, const QuantEncoding& encoding,
                               const Value& value) {
  if (encoding.bits != 8 && encoding.bits != 16) {
    return InvalidInput(rules::Describe(role, value) + ": a " + std::to_string(encoding.bits) +
                        "-bit encoding, expected 8 or 16");
  }
  if (encoding.granularity != EncodingGranularity::kPerTensor &&
      encoding.granularity != EncodingGranularity::kPerAxis) {
    return InvalidInput(rules::Describe(role, value) + ": a " + EncodingString(encoding) +
                        " encoding, expected per-tensor or per-axis");
  }
  return ValidateEncoding(encoding, value.shape, StorageDType(encoding));
}

}  // namespace

Result<OutputSpec> InferOutput(const QuantizeAttrs& attrs, RuleInputs in) {
  KITE_RETURN_IF_ERROR(rules::ExpectInputs(in, 1, "x"));
  KITE_RETURN_IF_ERROR(rules::ExpectDType("x", *in[0], DType::kF32));
  KITE_RETURN_IF_ERROR(CheckActivationEncoding("x", attrs.encoding, *in[0]));
  // The builder stores the output as StorageDType(encoding) under the encoding.
  return OutputSpec::Of(DType::kF32, in[0]->shape);
}

Result<OutputSpec> InferOutput(const DequantizeAttrs& attrs, RuleInputs in) {
  KITE_RETURN_IF_ERROR(rules::ExpectInputs(in, 1, "q"));
  const Value& q = *in[0];
  if (!q.encoding || *q.encoding != attrs.encoding) {
    return InvalidInput(rules::Describe("q", q) + " carries " +
                        (q.encoding ? EncodingString(*q.encoding) : std::string("no encoding")) +
                        ", the op dequantizes " + EncodingString(attrs.encoding));
  }
  KITE_RETURN_IF_ERROR(CheckActivationEncoding("q", attrs.encoding, q));
  return OutputSpec::Of(DType::kF32, q.shape);
}

}  // namespace kite
