// Shape rules of the views (reshape, permute, slice): they compute the output's strides and its
// offset into the input's memory; no data moves.
#include <vector>

#include "graph/op_rules.h"
#include "tensor/tensor.h"

namespace kite {

namespace {

Status ExpectPlainElements(const Value& x) {
  if (Traits(x.dtype).block_size != 1) {
    return InvalidInput(rules::Describe("x", x) +
                        ": this view of a block-quantized value would split blocks");
  }
  return Ok();
}

}  // namespace

Result<OutputSpec> InferOutput(const ReshapeAttrs& attrs, RuleInputs in) {
  KITE_RETURN_IF_ERROR(rules::ExpectInputs(in, 1, "x"));
  const Value& x = *in[0];
  KITE_RETURN_IF_ERROR(ExpectPlainElements(x));
  if (!x.contiguous()) {
    return InvalidInput(rules::Describe("x", x) +
                        " is a strided view; reshape needs contiguous memory");
  }
  std::vector<int64_t> shape = attrs.shape;
  int inferred = -1;
  int64_t known = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1 && inferred < 0) {
      inferred = static_cast<int>(i);
    } else if (shape[i] <= 0) {
      return InvalidInput("target shape " + ShapeString(attrs.shape) +
                          " may hold one -1 and otherwise dims >= 1");
    } else {
      known *= shape[i];
    }
  }
  if (inferred >= 0 && known > 0 && x.elements() % known == 0) {
    shape[inferred] = x.elements() / known;
    known *= shape[inferred];
  }
  if (known != x.elements()) {
    return InvalidInput(rules::Describe("x", x) + " cannot be reshaped to " +
                        ShapeString(attrs.shape) + ": element counts differ");
  }
  OutputSpec out = OutputSpec::Of(x.dtype, shape);
  out.strides = ContiguousStrides(shape);
  return out;
}

Result<OutputSpec> InferOutput(const PermuteAttrs& attrs, RuleInputs in) {
  KITE_RETURN_IF_ERROR(rules::ExpectInputs(in, 1, "x"));
  const Value& x = *in[0];
  KITE_RETURN_IF_ERROR(ExpectPlainElements(x));
  const size_t rank = x.shape.size();
  std::vector<bool> seen(rank, false);
  bool valid = attrs.perm.size() == rank;
  for (size_t i = 0; valid && i < rank; ++i) {
    const int32_t p = attrs.perm[i];
    valid = p >= 0 && static_cast<size_t>(p) < rank && !seen[p];
    if (valid) seen[p] = true;
  }
  if (!valid) {
    std::vector<int64_t> perm(attrs.perm.begin(), attrs.perm.end());
    return InvalidInput("perm " + ShapeString(perm) + " is not a permutation of the " +
                        std::to_string(rank) + " dims of " + rules::Describe("x", x));
  }
  OutputSpec out = OutputSpec::Of(x.dtype, {});
  for (int32_t p : attrs.perm) {
    out.shape.push_back(x.shape[p]);
    out.strides.push_back(x.strides[p]);
  }
  return out;
}

Result<OutputSpec> InferOutput(const SliceAttrs& attrs, RuleInputs in) {
  KITE_RETURN_IF_ERROR(rules::ExpectInputs(in, 1, "x"));
  const Value& x = *in[0];
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  const int64_t dim = attrs.dim < 0 ? attrs.dim + rank : attrs.dim;
  if (dim < 0 || dim >= rank) {
    return InvalidInput("dim " + std::to_string(attrs.dim) + " is out of range for " +
                        rules::Describe("x", x));
  }
  // Whole rows of a contiguous block-quantized weight can be sliced: the blocks stay intact.
  const bool whole_rows =
      dim == 0 && x.contiguous() && x.shape.back() % Traits(x.dtype).block_size == 0;
  if (!whole_rows) KITE_RETURN_IF_ERROR(ExpectPlainElements(x));
  if (attrs.start < 0 || attrs.end <= attrs.start || attrs.end > x.shape[dim]) {
    return InvalidInput("range [" + std::to_string(attrs.start) + ", " + std::to_string(attrs.end) +
                        ") of dim " + std::to_string(dim) + " is empty or outside " +
                        rules::Describe("x", x));
  }
  OutputSpec out = OutputSpec::Of(x.dtype, x.shape);
  out.strides = x.strides;
  out.shape[dim] = attrs.end - attrs.start;
  out.view_offset = attrs.start * x.strides[dim];
  return out;
}

}  // namespace kite
