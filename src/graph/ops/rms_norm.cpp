#include <cmath>

#include "graph/op_rules.h"

namespace kite {

Result<OutputSpec> InferOutput(const RmsNormAttrs& attrs, RuleInputs in) {
  KITE_RETURN_IF_ERROR(rules::ExpectInputs(in, 2, "x, weight"));
  const Value& x = *in[0];
  const Value& weight = *in[1];
  KITE_RETURN_IF_ERROR(rules::ExpectActivation("x", x));
  KITE_RETURN_IF_ERROR(rules::ExpectPlainFloat("weight", weight));
  if (weight.shape.size() != 1 || weight.shape[0] != x.shape.back() || !weight.contiguous()) {
    return InvalidInput(rules::Describe("x", x) + " and " + rules::Describe("weight", weight) +
                        ": weight must be contiguous [" + std::to_string(x.shape.back()) + "]");
  }
  if (!(attrs.eps >= 0.0f) || !std::isfinite(attrs.eps)) {
    return InvalidInput("eps " + std::to_string(attrs.eps) + " must be finite and >= 0");
  }
  return OutputSpec::Of(DType::kF32, x.shape);
}

}  // namespace kite
