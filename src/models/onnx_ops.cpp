// The ONNX ops Kite folds and infers shapes for (models/onnx_fold.h): those torch.onnx.export
// and Optimum emit for decoder-only transformers. Semantics from the ONNX operator
// specification (opset 13-17); each op computes its output shapes, and its elements when every
// input is a folded constant.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "base/half.h"
#include "models/onnx_fold.h"
#include "tensor/tensor.h"

namespace kite {

namespace {

using Shape = std::vector<int64_t>;
using Inputs = std::span<const OnnxValue* const>;

std::unexpected<Error> Fail(std::string why) {
  return std::unexpected(Error{ErrorCode::kUnsupported, std::move(why)});
}

bool IsFloat(OnnxType t) {
  return t == OnnxType::kFloat || t == OnnxType::kDouble || t == OnnxType::kFloat16 ||
         t == OnnxType::kBfloat16;
}

// A computed element rounded to `type` as a runtime holding it would store it.
double Round(OnnxType type, double x) {
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

int64_t Count(const Shape& s) { return OnnxElementCount(s); }

bool AllData(Inputs in) {
  for (const OnnxValue* v : in) {
    if (v != nullptr && !v->data) return false;
  }
  return true;
}

const OnnxValue& Need(Inputs in, size_t i, const char* what) {
  static const OnnxValue kNone;
  return i < in.size() && in[i] != nullptr ? *in[i] : kNone;
}

Result<std::vector<int64_t>> Ints(Inputs in, size_t i, const char* what) {
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

int64_t IntAttr(const OnnxNode& node, std::string_view name, int64_t fallback) {
  const OnnxAttribute* a = node.Attribute(name);
  return a != nullptr && a->kind == OnnxAttribute::Kind::kInt ? a->i : fallback;
}

// Ints() read as dimensions: -1 (infer) to kMaxDim.
Result<std::vector<int64_t>> Dims(Inputs in, size_t i, const char* what) {
  std::vector<int64_t> dims = KITE_TRY(Ints(in, i, what));
  if (dims.size() > kMaxRank) return Fail(std::string(what) + " has more than 16 dimensions");
  for (int64_t d : dims) {
    if (d < -1 || d > kMaxDim) return Fail(std::string(what) + " holds dimension " + std::to_string(d));
  }
  return dims;
}

Result<int64_t> Axis(int64_t axis, size_t rank) {
  const int64_t r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r) {
    return Fail("axis " + std::to_string(axis) + " is outside rank " + std::to_string(rank));
  }
  return axis < 0 ? axis + r : axis;
}

Shape Strides(const Shape& s) {
  Shape strides(s.size(), 1);
  for (size_t i = s.size(); i-- > 1;) strides[i - 1] = strides[i] * s[i];
  return strides;
}

Result<Shape> Broadcast(const std::vector<Shape>& shapes) {
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
std::vector<int64_t> BroadcastIndex(const Shape& in, const Shape& out) {
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

Status Elementwise(const OnnxNode& node, Inputs in, std::span<OnnxValue> out, OnnxType type,
                   const std::function<double(std::span<const double>)>& f) {
  std::vector<Shape> shapes;
  for (const OnnxValue* v : in) shapes.push_back(v->shape);
  out[0].shape = KITE_TRY(Broadcast(shapes));
  out[0].type = type;
  out[0].shape_known = true;
  if (!AllData(in) || Count(out[0].shape) > kMaxFoldElements) return Ok();
  std::vector<std::vector<int64_t>> index;
  for (const OnnxValue* v : in) index.push_back(BroadcastIndex(v->shape, out[0].shape));
  std::vector<double> result(Count(out[0].shape));
  std::vector<double> args(in.size());
  for (size_t o = 0; o < result.size(); ++o) {
    for (size_t i = 0; i < in.size(); ++i) args[i] = (*in[i]->data)[index[i][o]];
    result[o] = Round(type, f(args));
  }
  out[0].data = std::move(result);
  return Ok();
}

double Binary(std::string_view op, double a, double b, bool integer) {
  if (op == "Add") return a + b;
  if (op == "Sub") return a - b;
  if (op == "Mul") return a * b;
  if (op == "Div") return integer ? (b == 0 ? 0 : std::trunc(a / b)) : a / b;
  if (op == "Pow") return std::pow(a, b);
  if (op == "Equal") return a == b;
  if (op == "Less") return a < b;
  if (op == "LessOrEqual") return a <= b;
  if (op == "Greater") return a > b;
  if (op == "GreaterOrEqual") return a >= b;
  if (op == "And") return a != 0 && b != 0;
  if (op == "Or") return a != 0 || b != 0;
  if (op == "Max") return std::max(a, b);
  if (op == "Min") return std::min(a, b);
  return NAN;
}

double Unary(std::string_view op, double x) {
  if (op == "Neg") return -x;
  if (op == "Sqrt") return std::sqrt(x);
  if (op == "Cos") return std::cos(static_cast<float>(x));
  if (op == "Sin") return std::sin(static_cast<float>(x));
  if (op == "Sigmoid") return 1 / (1 + std::exp(-x));
  if (op == "Not") return x == 0;
  if (op == "Reciprocal") return 1 / x;
  if (op == "Exp") return std::exp(x);
  if (op == "Abs") return std::fabs(x);
  if (op == "Tanh") return std::tanh(x);
  if (op == "Erf") return std::erf(x);
  if (op == "Relu") return std::max(x, 0.0);
  if (op == "Floor") return std::floor(x);
  if (op == "Ceil") return std::ceil(x);
  if (op == "Log") return std::log(x);
  return NAN;
}

bool Member(std::string_view op, std::initializer_list<std::string_view> ops) {
  return std::find(ops.begin(), ops.end(), op) != ops.end();
}

// Rearranges elements: out[o] = in[source(o)], where source maps an output's coordinates.
void Gather(const OnnxValue& in, OnnxValue* out,
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

Status ShapeOps(const OnnxModel& model, const OnnxNode& node, Inputs in, std::span<OnnxValue> out);

}  // namespace

Status EvaluateOnnxNode(const OnnxModel& model, const OnnxNode& node, Inputs in,
                        std::span<OnnxValue> out) {
  const std::string& op = node.op_type;
  if (node.domain != "" && node.domain != "com.microsoft") {
    return Fail("op domain '" + node.domain + "' is not one Kite reads");
  }
  if (out.empty()) return Fail("the node has no outputs");
  // Every op but Constant takes its first input; optional later ones are checked where read.
  if (op != "Constant" && (in.empty() || in[0] == nullptr)) return Fail("its first input is missing");
  if (Member(op, {"Add", "Sub", "Mul", "Div", "Pow", "Equal", "Less", "LessOrEqual", "Greater",
                  "GreaterOrEqual", "And", "Or", "Max", "Min"})) {
    if (in.size() != 2 || in[1] == nullptr) return Fail("expected two inputs");
    const bool comparison = Member(op, {"Equal", "Less", "LessOrEqual", "Greater",
                                        "GreaterOrEqual", "And", "Or"});
    const bool integer = !IsFloat(in[0]->type);
    const OnnxType type = comparison ? OnnxType::kBool : in[0]->type;
    return Elementwise(node, in, out, type, [&](std::span<const double> a) {
      return Binary(op, a[0], a[1], integer);
    });
  }
  if (Member(op, {"Neg", "Sqrt", "Cos", "Sin", "Sigmoid", "Not", "Reciprocal", "Exp", "Abs",
                  "Tanh", "Erf", "Relu", "Floor", "Ceil", "Log"})) {
    return Elementwise(node, in.first(1), out, in[0]->type,
                       [&](std::span<const double> a) { return Unary(op, a[0]); });
  }
  if (op == "Where") {
    if (in.size() != 3 || in[1] == nullptr || in[2] == nullptr) return Fail("expected three inputs");
    return Elementwise(node, in, out, in[1]->type,
                       [](std::span<const double> a) { return a[0] != 0 ? a[1] : a[2]; });
  }
  if (op == "Cast" || op == "Identity") {
    const OnnxType type = op == "Cast" ? static_cast<OnnxType>(IntAttr(node, "to", 0)) : in[0]->type;
    return Elementwise(node, in.first(1), out, type,
                       [](std::span<const double> a) { return a[0]; });
  }
  if (op == "Softmax" || op == "SimplifiedLayerNormalization") {
    out[0].type = in[0]->type;
    out[0].shape = in[0]->shape;
    out[0].shape_known = true;
    return Ok();
  }
  return ShapeOps(model, node, in, out);
}

namespace {

Status ShapeOps(const OnnxModel& model, const OnnxNode& node, Inputs in, std::span<OnnxValue> out) {
  const std::string& op = node.op_type;
  OnnxValue& o = out[0];
  o.shape_known = true;
  if (op == "Constant") {
    const OnnxAttribute* value = node.Attribute("value");
    if (value == nullptr || value->kind != OnnxAttribute::Kind::kTensor) {
      return Fail("only the 'value' tensor form of Constant is read");
    }
    o = ConstantValue(model.attribute_tensors()[value->tensor]);
    return Ok();
  }
  if (in.empty()) return Fail("the node has no inputs");
  const OnnxValue& x = *in[0];
  o.type = x.type;
  if (op == "Shape") {
    const int64_t rank = static_cast<int64_t>(x.shape.size());
    int64_t start = IntAttr(node, "start", 0), end = IntAttr(node, "end", rank);
    if (start < 0) start += rank;
    if (end < 0) end += rank;
    start = std::clamp<int64_t>(start, 0, rank);
    end = std::clamp<int64_t>(end, start, rank);
    o.type = OnnxType::kInt64;
    o.shape = {end - start};
    o.data = std::vector<double>(x.shape.begin() + start, x.shape.begin() + end);
    return Ok();
  }
  if (op == "ConstantOfShape") {
    const std::vector<int64_t> shape = KITE_TRY(Dims(in, 0, "shape"));
    if (std::find(shape.begin(), shape.end(), -1) != shape.end()) return Fail("ConstantOfShape of dimension -1");
    o.shape = shape;
    o.type = OnnxType::kFloat;
    double fill = 0;
    if (const OnnxAttribute* value = node.Attribute("value"); value != nullptr && value->tensor >= 0) {
      const OnnxValue v = ConstantValue(model.attribute_tensors()[value->tensor]);
      o.type = v.type;
      if (v.Scalar()) fill = *v.Scalar();
    }
    if (Count(o.shape) > kMaxFoldElements) return Ok();
    o.data = std::vector<double>(Count(o.shape), fill);
    return Ok();
  }
  if (op == "Range") {
    if (!AllData(in) || in.size() != 3) return Fail("Range needs constant start, limit and delta");
    const double start = Need(in, 0, "").data->at(0), limit = Need(in, 1, "").data->at(0),
                 delta = Need(in, 2, "").data->at(0);
    const double count = std::ceil((limit - start) / delta);
    if (!(count <= static_cast<double>(kMaxFoldElements))) return Fail("Range of " + std::to_string(count) + " elements");
    const int64_t n = std::max<int64_t>(0, static_cast<int64_t>(count));
    o.shape = {n};
    std::vector<double> values(n);
    for (int64_t i = 0; i < n; ++i) values[i] = Round(x.type, start + i * delta);
    o.data = std::move(values);
    return Ok();
  }
  if (op == "Unsqueeze" || op == "Squeeze") {
    std::vector<int64_t> axes;
    if (in.size() > 1 && in[1] != nullptr) axes = KITE_TRY(Ints(in, 1, "axes"));
    else if (const OnnxAttribute* a = node.Attribute("axes")) axes = a->ints;
    Shape shape = x.shape;
    if (axes.size() > kMaxRank) return Fail("more than 16 axes");
    if (op == "Unsqueeze") {
      const size_t rank = shape.size() + axes.size();
      if (rank > kMaxRank) return Fail("a result of more than 16 dimensions");
      for (int64_t& a : axes) a = KITE_TRY(Axis(a, rank));
      std::sort(axes.begin(), axes.end());
      for (int64_t a : axes) shape.insert(shape.begin() + a, 1);
    } else {
      if (axes.empty()) {
        std::erase(shape, 1);
      } else {
        for (int64_t& a : axes) a = KITE_TRY(Axis(a, shape.size()));
        std::sort(axes.rbegin(), axes.rend());
        for (int64_t a : axes) {
          if (shape[a] != 1) return Fail("Squeeze of axis " + std::to_string(a) + " of size " + std::to_string(shape[a]));
          shape.erase(shape.begin() + a);
        }
      }
    }
    o.shape = shape;
    o.data = x.data;
    return Ok();
  }
  if (op == "Reshape") {
    const std::vector<int64_t> target = KITE_TRY(Dims(in, 1, "shape"));
    const bool allow_zero = IntAttr(node, "allowzero", 0) != 0;
    Shape shape;
    int64_t infer = -1, known = 1;
    for (size_t i = 0; i < target.size(); ++i) {
      int64_t d = target[i];
      if (d == 0 && !allow_zero) {
        if (i >= x.shape.size()) return Fail("Reshape copies dimension " + std::to_string(i) + " the input lacks");
        d = x.shape[i];
      }
      if (d == -1) {
        if (infer >= 0) return Fail("Reshape with two -1 dimensions");
        infer = static_cast<int64_t>(i);
        d = 1;
      } else if (d < 0) {
        return Fail("Reshape to dimension " + std::to_string(d));
      }
      shape.push_back(d);
      known *= d;
    }
    if (infer >= 0) {
      if (known == 0 || x.count() % known != 0) return Fail("Reshape of " + ShapeString(x.shape) + " to " + ShapeString(target));
      shape[infer] = x.count() / known;
    }
    if (Count(shape) != x.count()) {
      return Fail("Reshape of " + ShapeString(x.shape) + " to " + ShapeString(shape));
    }
    o.shape = shape;
    o.data = x.data;
    return Ok();
  }
  if (op == "Expand") {
    const std::vector<int64_t> target = KITE_TRY(Dims(in, 1, "shape"));
    if (std::find(target.begin(), target.end(), -1) != target.end()) return Fail("Expand to dimension -1");
    o.shape = KITE_TRY(Broadcast({x.shape, target}));
    if (x.data && Count(o.shape) <= kMaxFoldElements) {
      const std::vector<int64_t> index = BroadcastIndex(x.shape, o.shape);
      std::vector<double> values(index.size());
      for (size_t i = 0; i < index.size(); ++i) values[i] = (*x.data)[index[i]];
      o.data = std::move(values);
    }
    return Ok();
  }
  if (op == "Transpose") {
    std::vector<int64_t> perm;
    if (const OnnxAttribute* a = node.Attribute("perm")) perm = a->ints;
    if (perm.empty()) {
      for (size_t i = x.shape.size(); i-- > 0;) perm.push_back(static_cast<int64_t>(i));
    }
    if (perm.size() != x.shape.size()) return Fail("perm has " + std::to_string(perm.size()) + " axes for rank " + std::to_string(x.shape.size()));
    std::vector<bool> seen(perm.size());
    for (int64_t p : perm) {
      if (p < 0 || p >= static_cast<int64_t>(perm.size()) || seen[p]) return Fail("perm is not a permutation");
      seen[p] = true;
      o.shape.push_back(x.shape[p]);
    }
    const Shape strides = Strides(x.shape);
    Gather(x, &o, [&](const Shape& c) {
      int64_t i = 0;
      for (size_t d = 0; d < c.size(); ++d) i += c[d] * strides[perm[d]];
      return i;
    });
    return Ok();
  }
  if (op == "Concat") {
    const int64_t axis = KITE_TRY(Axis(IntAttr(node, "axis", 0), x.shape.size()));
    o.shape = x.shape;
    o.shape[axis] = 0;
    for (const OnnxValue* v : in) {
      if (v == nullptr || v->shape.size() != x.shape.size()) return Fail("Concat of inputs of different ranks");
      for (size_t d = 0; d < x.shape.size(); ++d) {
        if (static_cast<int64_t>(d) != axis && v->shape[d] != x.shape[d]) {
          return Fail("Concat of " + ShapeString(x.shape) + " and " + ShapeString(v->shape));
        }
      }
      o.shape[axis] += v->shape[axis];
      if (o.shape[axis] > kMaxDim) return Fail("Concat beyond dimension 2^40");
    }
    if (AllData(in) && Count(o.shape) <= kMaxFoldElements) {
      const Shape strides = Strides(o.shape);
      std::vector<double> values(Count(o.shape));
      int64_t base = 0;
      for (const OnnxValue* v : in) {
        const Shape vs = Strides(v->shape);
        for (int64_t i = 0; i < v->count(); ++i) {
          int64_t target = 0;
          for (size_t d = 0; d < vs.size(); ++d) {
            const int64_t c = (i / vs[d]) % v->shape[d];
            target += (static_cast<int64_t>(d) == axis ? c + base : c) * strides[d];
          }
          values[target] = (*v->data)[i];
        }
        base += v->shape[axis];
      }
      o.data = std::move(values);
    }
    return Ok();
  }
  if (op == "Gather") {
    const OnnxValue& indices = Need(in, 1, "indices");
    if (in.size() < 2 || in[1] == nullptr) return Fail("expected data and indices");
    const int64_t axis = KITE_TRY(Axis(IntAttr(node, "axis", 0), x.shape.size()));
    o.shape.assign(x.shape.begin(), x.shape.begin() + axis);
    o.shape.insert(o.shape.end(), indices.shape.begin(), indices.shape.end());
    o.shape.insert(o.shape.end(), x.shape.begin() + axis + 1, x.shape.end());
    if (x.data && indices.data) {
      const Shape xs = Strides(x.shape);
      const size_t ir = indices.shape.size();
      const Shape is = Strides(indices.shape);
      for (double i : *indices.data) {
        if (i < -x.shape[axis] || i >= x.shape[axis]) return Fail("Gather index " + std::to_string(static_cast<int64_t>(i)) + " out of range");
      }
      Gather(x, &o, [&](const Shape& c) {
        int64_t at = 0;
        for (size_t d = 0; d < ir; ++d) at += c[axis + d] * is[d];
        int64_t k = static_cast<int64_t>((*indices.data)[at]);
        if (k < 0) k += x.shape[axis];
        int64_t i = k * xs[axis];
        for (int64_t d = 0; d < axis; ++d) i += c[d] * xs[d];
        for (size_t d = axis + 1; d < x.shape.size(); ++d) i += c[d + ir - 1] * xs[d];
        return i;
      });
    }
    return Ok();
  }
  if (op == "Slice") {
    const std::vector<int64_t> starts = KITE_TRY(Ints(in, 1, "starts"));
    const std::vector<int64_t> ends = KITE_TRY(Ints(in, 2, "ends"));
    std::vector<int64_t> axes, steps(starts.size(), 1);
    if (in.size() > 3 && in[3] != nullptr) axes = KITE_TRY(Ints(in, 3, "axes"));
    else for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
    if (in.size() > 4 && in[4] != nullptr) steps = KITE_TRY(Ints(in, 4, "steps"));
    if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size()) {
      return Fail("Slice's starts, ends, axes and steps differ in length");
    }
    Shape begin(x.shape.size(), 0), step(x.shape.size(), 1);
    o.shape = x.shape;
    for (size_t i = 0; i < starts.size(); ++i) {
      const int64_t a = KITE_TRY(Axis(axes[i], x.shape.size()));
      const int64_t n = x.shape[a];
      if (steps[i] == 0 || steps[i] < -kMaxDim || steps[i] > kMaxDim) {
        return Fail("Slice with step " + std::to_string(steps[i]));
      }
      auto clamp = [&](int64_t v, bool is_end) {
        if (v < 0) v += n;
        return steps[i] > 0 ? std::clamp<int64_t>(v, 0, n) : std::clamp<int64_t>(v, -1, n - 1);
      };
      const int64_t s = clamp(starts[i], false), e = clamp(ends[i], true);
      const int64_t len = steps[i] > 0 ? std::max<int64_t>(0, (e - s + steps[i] - 1) / steps[i])
                                       : std::max<int64_t>(0, (s - e - steps[i] - 1) / -steps[i]);
      begin[a] = s;
      step[a] = steps[i];
      o.shape[a] = len;
    }
    const Shape strides = Strides(x.shape);
    Gather(x, &o, [&](const Shape& c) {
      int64_t i = 0;
      for (size_t d = 0; d < c.size(); ++d) i += (begin[d] + c[d] * step[d]) * strides[d];
      return i;
    });
    return Ok();
  }
  if (op == "Trilu") {
    const int64_t k = in.size() > 1 && in[1] != nullptr ? KITE_TRY(Ints(in, 1, "k"))[0] : 0;
    const bool upper = IntAttr(node, "upper", 1) != 0;
    if (x.shape.size() < 2) return Fail("Trilu of rank " + std::to_string(x.shape.size()));
    o.shape = x.shape;
    if (x.data && !x.data->empty()) {
      const int64_t rows = x.shape[x.shape.size() - 2], cols = x.shape.back();
      std::vector<double> values = *x.data;
      for (size_t i = 0; i < values.size(); ++i) {
        const int64_t r = (static_cast<int64_t>(i) / cols) % rows, c = static_cast<int64_t>(i) % cols;
        if (upper ? c - r < k : c - r > k) values[i] = 0;
      }
      o.data = std::move(values);
    }
    return Ok();
  }
  if (op == "ReduceMean" || op == "ReduceSum") {
    std::vector<int64_t> axes;
    if (const OnnxAttribute* a = node.Attribute("axes")) axes = a->ints;
    else if (in.size() > 1 && in[1] != nullptr) axes = KITE_TRY(Ints(in, 1, "axes"));
    if (axes.empty()) for (size_t d = 0; d < x.shape.size(); ++d) axes.push_back(static_cast<int64_t>(d));
    for (int64_t& a : axes) a = KITE_TRY(Axis(a, x.shape.size()));
    const bool keep = IntAttr(node, "keepdims", 1) != 0;
    Shape kept = x.shape;
    for (int64_t a : axes) kept[a] = 1;
    for (size_t d = 0; d < kept.size(); ++d) {
      if (kept[d] != 1 || keep || std::find(axes.begin(), axes.end(), d) == axes.end()) o.shape.push_back(kept[d]);
    }
    if (x.data) {
      std::vector<double> sums(Count(kept), 0);
      const std::vector<int64_t> index = BroadcastIndex(kept, x.shape);
      for (size_t i = 0; i < index.size(); ++i) sums[index[i]] += (*x.data)[i];
      const double n = static_cast<double>(x.count()) / static_cast<double>(std::max<int64_t>(1, Count(kept)));
      for (double& s : sums) s = Round(x.type, op == "ReduceMean" ? s / n : s);
      o.data = std::move(sums);
    }
    return Ok();
  }
  if (op == "MatMul") {
    const OnnxValue& y = Need(in, 1, "B");
    if (in.size() < 2 || in[1] == nullptr) return Fail("expected two inputs");
    if (x.shape.size() < 2 || y.shape.size() < 2) return Fail("MatMul of a vector is not read");
    const int64_t m = x.shape[x.shape.size() - 2], k = x.shape.back(), n = y.shape.back();
    if (y.shape[y.shape.size() - 2] != k) {
      return Fail("MatMul of " + ShapeString(x.shape) + " by " + ShapeString(y.shape));
    }
    const Shape xb(x.shape.begin(), x.shape.end() - 2), yb(y.shape.begin(), y.shape.end() - 2);
    o.shape = KITE_TRY(Broadcast({xb, yb}));
    const Shape batch = o.shape;
    o.shape.push_back(m);
    o.shape.push_back(n);
    if (x.data && y.data && Count(o.shape) <= kMaxFoldElements &&
        Count(o.shape) * k <= kMaxFoldElements * 16) {
      const std::vector<int64_t> xi = BroadcastIndex(xb, batch), yi = BroadcastIndex(yb, batch);
      std::vector<double> values(Count(o.shape));
      for (size_t b = 0; b < xi.size(); ++b) {
        for (int64_t r = 0; r < m; ++r) {
          for (int64_t c = 0; c < n; ++c) {
            double sum = 0;
            for (int64_t j = 0; j < k; ++j) {
              sum += (*x.data)[(xi[b] * m + r) * k + j] * (*y.data)[(yi[b] * k + j) * n + c];
            }
            values[(b * m + r) * n + c] = Round(x.type, sum);
          }
        }
      }
      o.data = std::move(values);
    }
    return Ok();
  }
  if (op == "Gemm") {
    const OnnxValue& y = Need(in, 1, "B");
    if (x.shape.size() != 2 || y.shape.size() != 2) return Fail("Gemm takes matrices");
    const bool ta = IntAttr(node, "transA", 0) != 0, tb = IntAttr(node, "transB", 0) != 0;
    o.shape = {x.shape[ta ? 1 : 0], y.shape[tb ? 0 : 1]};
    if (x.shape[ta ? 0 : 1] != y.shape[tb ? 1 : 0]) return Fail("Gemm of " + ShapeString(x.shape) + " by " + ShapeString(y.shape));
    return Ok();
  }
  return Fail("Kite does not fold or infer shapes for op " + op);
}

}  // namespace

}  // namespace kite
