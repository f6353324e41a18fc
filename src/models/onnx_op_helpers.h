// What the ONNX op evaluators (models/onnx_ops.cpp: element-wise, reductions, MatMul;
// models/onnx_shape_ops.cpp: shapes and data movement) share: rounding to a type, reading folded
// inputs as integers or dimensions, axes, broadcasting, and the limits that keep a broken file
// from overflowing or allocating without bound.
#pragma once

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "base/half.h"
#include "models/onnx_fold.h"
#include "tensor/tensor.h"

namespace kite::onnx_op {

using Shape = std::vector<int64_t>;
using Inputs = std::span<const OnnxValue* const>;

inline std::unexpected<Error> Fail(std::string why) {
  return std::unexpected(Error{ErrorCode::kUnsupported, std::move(why)});
}

inline bool IsFloat(OnnxType t) {
  return t == OnnxType::kFloat || t == OnnxType::kDouble || t == OnnxType::kFloat16 ||
         t == OnnxType::kBfloat16;
}

// A computed element rounded to `type` as a runtime holding it would store it.
inline double Round(OnnxType type, double x) {
  switch (type) {
    case OnnxType::kFloat: return static_cast<float>(x);
    case OnnxType::kDouble: return x;
    case OnnxType::kFloat16: return F16ToF32(F32ToF16(static_cast<float>(x)));
    case OnnxType::kBfloat16: return Bf16ToF32(F32ToBf16(static_cast<float>(x)));
    case OnnxType::kBool: return x != 0 ? 1 : 0;
    default:
      if (std::isnan(x)) return 0;
      return std::trunc(std::clamp(x, -9.2e18, 9.2e18));
  }
}

// A dimension larger than this is refused (a fuzzed or broken file), so no product overflows.
constexpr int64_t kMaxDim = int64_t{1} << 40;
constexpr size_t kMaxRank = 16;

inline int64_t Count(const Shape& s) { return OnnxElementCount(s); }

inline bool AllData(Inputs in) {
  for (const OnnxValue* v : in) {
    if (v != nullptr && !v->data) return false;
  }
  return true;
}

// Input i, or an empty value when the node omits it.
inline const OnnxValue& Need(Inputs in, size_t i) {
  static const OnnxValue kNone;
  return i < in.size() && in[i] != nullptr ? *in[i] : kNone;
}

inline Result<std::vector<int64_t>> Ints(Inputs in, size_t i, const char* what) {
  if (i >= in.size() || in[i] == nullptr) return Fail(std::string("its input ") + what + " is missing");
  if (!in[i]->data) {
    return Fail(std::string("its input ") + what + " is not a constant after folding");
  }
  std::vector<int64_t> out;
  for (double d : *in[i]->data) {
    // INT64_MAX (Slice's "to the end") is 2^63 as a double, past what a cast may convert.
    out.push_back(d >= 9.2e18    ? std::numeric_limits<int64_t>::max()
                  : d <= -9.2e18 ? std::numeric_limits<int64_t>::min()
                                 : static_cast<int64_t>(d));
  }
  return out;
}

inline int64_t IntAttr(const OnnxNode& node, std::string_view name, int64_t fallback) {
  const OnnxAttribute* a = node.Attribute(name);
  return a != nullptr && a->kind == OnnxAttribute::Kind::kInt ? a->i : fallback;
}

// Ints() read as dimensions: -1 (infer) to kMaxDim.
inline Result<std::vector<int64_t>> Dims(Inputs in, size_t i, const char* what) {
  std::vector<int64_t> dims = KITE_TRY(Ints(in, i, what));
  if (dims.size() > kMaxRank) return Fail(std::string(what) + " has more than 16 dimensions");
  for (int64_t d : dims) {
    if (d < -1 || d > kMaxDim) return Fail(std::string(what) + " holds dimension " + std::to_string(d));
  }
  return dims;
}

inline Result<int64_t> Axis(int64_t axis, size_t rank) {
  const int64_t r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r) {
    return Fail("axis " + std::to_string(axis) + " is outside rank " + std::to_string(rank));
  }
  return axis < 0 ? axis + r : axis;
}

inline Shape Strides(const Shape& s) {
  Shape strides(s.size(), 1);
  for (size_t i = s.size(); i-- > 1;) strides[i - 1] = strides[i] * s[i];
  return strides;
}

inline Result<Shape> Broadcast(const std::vector<Shape>& shapes) {
  size_t rank = 0;
  for (const Shape& s : shapes) rank = std::max(rank, s.size());
  Shape out(rank, 1);
  for (const Shape& s : shapes) {
    for (size_t i = 0; i < s.size(); ++i) {
      int64_t& o = out[rank - s.size() + i];
      if (s[i] == o || s[i] == 1) continue;
      if (o != 1) return Fail("shapes " + ShapeString(shapes[0]) + " and " + ShapeString(s) + " do not broadcast");
      o = s[i];
    }
  }
  return out;
}

// For each element of `out`, the index of the element of `in` it reads under broadcasting.
inline std::vector<int64_t> BroadcastIndex(const Shape& in, const Shape& out) {
  const Shape in_strides = Strides(in);
  const Shape out_strides = Strides(out);
  const size_t offset = out.size() - in.size();
  std::vector<int64_t> index(Count(out));
  for (int64_t o = 0; o < static_cast<int64_t>(index.size()); ++o) {
    int64_t i = 0;
    for (size_t d = offset; d < out.size(); ++d) {
      const int64_t coordinate = (o / out_strides[d]) % out[d];
      if (in[d - offset] != 1) i += coordinate * in_strides[d - offset];
    }
    index[o] = i;
  }
  return index;
}

inline bool Member(std::string_view op, std::initializer_list<std::string_view> ops) {
  return std::find(ops.begin(), ops.end(), op) != ops.end();
}

// Rearranges elements: out[o] = in[source(o)], where source maps an output's coordinates.
inline void Gather(const OnnxValue& in, OnnxValue* out,
            const std::function<int64_t(const Shape& coordinates)>& source) {
  if (!in.data || Count(out->shape) > kMaxFoldElements) return;
  const Shape strides = Strides(out->shape);
  std::vector<double> result(Count(out->shape));
  Shape c(out->shape.size());
  for (int64_t o = 0; o < static_cast<int64_t>(result.size()); ++o) {
    for (size_t d = 0; d < c.size(); ++d) c[d] = (o / strides[d]) % out->shape[d];
    result[o] = (*in.data)[source(c)];
  }
  out->data = std::move(result);
}

// The shape and data-movement ops (Constant, Shape, ConstantOfShape, Range, Unsqueeze, Squeeze,
// Reshape, Expand, Transpose, Concat, Gather, Slice, Trilu); Fail for any other op.
Status EvaluateShapeOp(const OnnxModel& model, const OnnxNode& node, Inputs in,
                       std::span<OnnxValue> out);

}  // namespace kite::onnx_op
