#include <cmath>

#include "graph/op_rules.h"

namespace kite {

Result<OutputSpec> InferOutput(const EmbeddingAttrs& attrs, RuleInputs in) {
  if (!std::isfinite(attrs.scale)) return InvalidInput("scale is not finite");
  KITE_RETURN_IF_ERROR(rules::ExpectInputs(in, 2, "table, ids"));
  const Value& table = *in[0];
  const Value& ids = *in[1];
  KITE_RETURN_IF_ERROR(rules::ExpectRank("table", table, 2));
  KITE_RETURN_IF_ERROR(rules::ExpectWholeBlockRows("table", table));
  KITE_RETURN_IF_ERROR(rules::ExpectRank("ids", ids, 1));
  KITE_RETURN_IF_ERROR(rules::ExpectDType("ids", ids, DType::kI32));
  return OutputSpec::Of(DType::kF32, {ids.shape[0], table.shape[1]});
}

}  // namespace kite
