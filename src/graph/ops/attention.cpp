#include <cmath>

#include "graph/op_rules.h"

namespace kite {

Result<OutputSpec> InferOutput(const AttentionAttrs& attrs, RuleInputs in) {
  KITE_RETURN_IF_ERROR(rules::ExpectInputs(in, 4, "q, k, v, positions"));
  const Value& q = *in[0];
  const Value& k = *in[1];
  const Value& v = *in[2];
  const Value& positions = *in[3];
  KITE_RETURN_IF_ERROR(rules::ExpectActivation("q", q));
  KITE_RETURN_IF_ERROR(rules::ExpectActivation("k", k));
  KITE_RETURN_IF_ERROR(rules::ExpectActivation("v", v));
  KITE_RETURN_IF_ERROR(rules::ExpectRank("q [T, q_heads, head_dim]", q, 3));
  KITE_RETURN_IF_ERROR(rules::ExpectRank("k [T, kv_heads, head_dim]", k, 3));
  if (k.shape != v.shape) {
    return InvalidInput(rules::Describe("k", k) + " and " + rules::Describe("v", v) +
                        " differ in shape");
  }
  if (k.shape[0] != q.shape[0] || k.shape[2] != q.shape[2]) {
    return InvalidInput(rules::Describe("q", q) + " and " + rules::Describe("k", k) +
                        ": tokens (dim 0) and head_dim (dim 2) must agree");
  }
  if (q.shape[1] % k.shape[1] != 0) {
    return InvalidInput(rules::Describe("q", q) + " and " + rules::Describe("k", k) + ": " +
                        std::to_string(q.shape[1]) + " query heads are not a multiple of " +
                        std::to_string(k.shape[1]) + " kv heads");
  }
  KITE_RETURN_IF_ERROR(rules::ExpectDType("positions", positions, DType::kI32));
  if (positions.shape.size() != 1 || positions.shape[0] != q.shape[0]) {
    return InvalidInput(rules::Describe("q", q) + " and " +
                        rules::Describe("positions", positions) + ": expected positions [" +
                        std::to_string(q.shape[0]) + "]");
  }
  if (attrs.layer < 0) return InvalidInput("layer " + std::to_string(attrs.layer) + " < 0");
  if (!std::isfinite(attrs.scale)) return InvalidInput("scale is not finite");
  if (attrs.window < 0) return InvalidInput("window " + std::to_string(attrs.window) + " < 0");
  if (!(attrs.softcap >= 0.0f) || !std::isfinite(attrs.softcap)) {
    return InvalidInput("softcap " + std::to_string(attrs.softcap) + " must be finite and >= 0");
  }
  return OutputSpec::Of(DType::kF32, q.shape);
}

}  // namespace kite
