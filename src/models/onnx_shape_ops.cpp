// The ONNX shape and data-movement ops Kite folds (models/onnx_fold.h), from the ONNX operator
// specification (opset 13-17): each computes its output shape, and its elements when its inputs
// are folded constants.
#include "models/onnx_op_helpers.h"

namespace kite::onnx_op {

Status EvaluateShapeOp(const OnnxModel& model, const OnnxNode& node, Inputs in,
                       std::span<OnnxValue> out) {
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
    if (in.size() != 3 || !Need(in, 0).Scalar() || !Need(in, 1).Scalar() || !Need(in, 2).Scalar()) {
      return Fail("Range needs constant scalars start, limit and delta");
    }
    const double start = *Need(in, 0).Scalar(), limit = *Need(in, 1).Scalar(),
                 delta = *Need(in, 2).Scalar();
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
    const OnnxValue& indices = Need(in, 1);
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
  if (op == "ScatterND") {  // data with updates written at the index tuples
    const OnnxValue& indices = Need(in, 1);
    const OnnxValue& updates = Need(in, 2);
    if (in.size() < 3 || in[1] == nullptr || in[2] == nullptr) return Fail("expected data, indices and updates");
    if (const OnnxAttribute* r = node.Attribute("reduction"); r != nullptr && r->s != "none") {
      return Fail("ScatterND with reduction '" + r->s + "'");
    }
    o.shape = x.shape;
    if (!x.data || !indices.data || !updates.data || indices.shape.empty()) return Ok();
    const int64_t k = indices.shape.back();
    if (k < 1 || k > static_cast<int64_t>(x.shape.size())) return Fail("ScatterND index tuples of " + std::to_string(k));
    const Shape strides = Strides(x.shape);
    const int64_t slice = strides[k - 1];  // elements each index tuple addresses
    const int64_t tuples = indices.count() / k;
    if (updates.count() != tuples * slice) return Fail("ScatterND updates of " + ShapeString(updates.shape));
    std::vector<double> values = *x.data;
    for (int64_t t = 0; t < tuples; ++t) {
      int64_t at = 0;
      for (int64_t d = 0; d < k; ++d) {
        int64_t i = static_cast<int64_t>((*indices.data)[t * k + d]);
        if (i < 0) i += x.shape[d];
        if (i < 0 || i >= x.shape[d]) return Fail("ScatterND index " + std::to_string(i) + " out of range");
        at += i * strides[d];
      }
      std::copy_n(updates.data->begin() + t * slice, slice, values.begin() + at);
    }
    o.data = std::move(values);
    return Ok();
  }
  if (op == "CumSum") {  // position ids from an attention mask
    o.shape = x.shape;
    const std::vector<int64_t> axis_value = KITE_TRY(Ints(in, 1, "axis"));
    if (axis_value.size() != 1) return Fail("CumSum axis is not a scalar");
    const int64_t axis = KITE_TRY(Axis(axis_value[0], x.shape.size()));
    const bool exclusive = IntAttr(node, "exclusive", 0) != 0, reverse = IntAttr(node, "reverse", 0) != 0;
    if (!x.data) return Ok();
    const Shape strides = Strides(x.shape);
    std::vector<double> values(x.data->size());
    const int64_t n = x.shape[axis], stride = strides[axis];
    for (int64_t i = 0; i < x.count(); ++i) {
      if ((i / stride) % n != 0) continue;  // one pass per line along the axis, from its start
      double sum = 0;
      for (int64_t j = 0; j < n; ++j) {
        const int64_t at = i + (reverse ? n - 1 - j : j) * stride;
        if (exclusive) values[at] = Round(x.type, sum);
        sum += (*x.data)[at];
        if (!exclusive) values[at] = Round(x.type, sum);
      }
    }
    o.data = std::move(values);
    return Ok();
  }
  return Fail("Kite does not fold or infer shapes for op " + op);
}

}  // namespace kite::onnx_op
