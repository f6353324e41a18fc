// Shape rules of the element-wise ops: add, mul (broadcasting), silu, gelu, swiglu, geglu,
// softcap, softmax.
#include <algorithm>
#include <cmath>
#include <string>

#include "graph/op_rules.h"

namespace kite {

namespace {

// NumPy broadcasting: shapes align at the last dim; each pair of dims is equal or one is 1.
Result<OutputSpec> Broadcast(RuleInputs in) {
  KITE_RETURN_IF_ERROR(rules::ExpectInputs(in, 2, "a, b"));
  KITE_RETURN_IF_ERROR(rules::ExpectActivation("a", *in[0]));
  KITE_RETURN_IF_ERROR(rules::ExpectActivation("b", *in[1]));
  const std::vector<int64_t>& a = in[0]->shape;
  const std::vector<int64_t>& b = in[1]->shape;
  std::vector<int64_t> shape(std::max(a.size(), b.size()));
  for (size_t i = 0; i < shape.size(); ++i) {
    const int64_t da = i < a.size() ? a[a.size() - 1 - i] : 1;
    const int64_t db = i < b.size() ? b[b.size() - 1 - i] : 1;
    if (da != db && da != 1 && db != 1) {
      return InvalidInput(rules::Describe("a", *in[0]) + " and " + rules::Describe("b", *in[1]) +
                          " do not broadcast: dims " + std::to_string(da) + " and " +
                          std::to_string(db) + " differ");
    }
    shape[shape.size() - 1 - i] = std::max(da, db);
  }
  return OutputSpec::Of(DType::kF32, std::move(shape));
}

}  // namespace

Result<OutputSpec> InferOutput(const AddAttrs&, RuleInputs in) { return Broadcast(in); }
Result<OutputSpec> InferOutput(const MulAttrs&, RuleInputs in) { return Broadcast(in); }
Result<OutputSpec> InferOutput(const SiluAttrs&, RuleInputs in) {
  return rules::SameShapeAsActivation(in);
}
Result<OutputSpec> InferOutput(const GeluAttrs&, RuleInputs in) {
  return rules::SameShapeAsActivation(in);
}
Result<OutputSpec> InferOutput(const SoftmaxAttrs&, RuleInputs in) {
  return rules::SameShapeAsActivation(in);
}

Result<OutputSpec> InferOutput(const SoftcapAttrs& attrs, RuleInputs in) {
  if (!(attrs.cap > 0.0f) || !std::isfinite(attrs.cap)) {
    return InvalidInput("softcap " + std::to_string(attrs.cap) + " must be finite and > 0");
  }
  return rules::SameShapeAsActivation(in);
}

Result<OutputSpec> InferOutput(const GeGluAttrs&, RuleInputs in) {
  return InferOutput(SwiGluAttrs{}, in);
}

Result<OutputSpec> InferOutput(const SwiGluAttrs&, RuleInputs in) {
  KITE_RETURN_IF_ERROR(rules::ExpectInputs(in, 2, "gate, up"));
  KITE_RETURN_IF_ERROR(rules::ExpectActivation("gate", *in[0]));
  KITE_RETURN_IF_ERROR(rules::ExpectActivation("up", *in[1]));
  if (in[0]->shape != in[1]->shape) {
    return InvalidInput(rules::Describe("gate", *in[0]) + " and " + rules::Describe("up", *in[1]) +
                        " differ in shape");
  }
  return OutputSpec::Of(DType::kF32, in[0]->shape);
}

}  // namespace kite
