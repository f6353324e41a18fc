#include "graph/op_rules.h"

namespace kite {

Result<OutputSpec> InferOutput(const MatMulAttrs&, RuleInputs in) {
  if (in.size() != 2 && in.size() != 3) {
    return InvalidInput("takes inputs x, w and an optional bias, got " + std::to_string(in.size()));
  }
  const Value& x = *in[0];
  const Value& w = *in[1];
  KITE_RETURN_IF_ERROR(rules::ExpectActivation("x", x));
  KITE_RETURN_IF_ERROR(rules::ExpectRank("w", w, 2));
  KITE_RETURN_IF_ERROR(rules::ExpectWholeBlockRows("w", w));
  const int64_t n = w.shape[0];
  const int64_t k = w.shape[1];
  if (x.shape.back() != k) {
    return InvalidInput(rules::Describe("x", x) + " and " + rules::Describe("w", w) +
                        ": x's last dim " + std::to_string(x.shape.back()) +
                        " must equal w's dim 1 (" + std::to_string(k) + ")");
  }
  if (in.size() == 3) {
    const Value& bias = *in[2];
    KITE_RETURN_IF_ERROR(rules::ExpectPlainFloat("bias", bias));
    if (bias.shape.size() != 1 || bias.shape[0] != n || !bias.contiguous()) {
      return InvalidInput(rules::Describe("bias", bias) + " and " + rules::Describe("w", w) +
                          ": bias must be contiguous [" + std::to_string(n) + "]");
    }
  }
  OutputSpec out = OutputSpec::Of(DType::kF32, x.shape);
  out.shape.back() = n;
  return out;
}

}  // namespace kite
