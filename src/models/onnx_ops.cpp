// The ONNX ops Kite folds and infers shapes for (models/onnx_fold.h): those torch.onnx.export
// and Optimum emit for decoder-only transformers. Semantics from the ONNX operator
// specification (opset 13-17); each op computes its output shapes, and its elements when every
// input is a folded constant. This file: element-wise ops, reductions, MatMul and Gemm; the
// shape and data-movement ops are models/onnx_shape_ops.cpp.
#include "models/onnx_op_helpers.h"

namespace kite {

namespace {

using namespace onnx_op;

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
  if (op == "Mod") return integer ? (b == 0 ? 0 : a - b * std::floor(a / b)) : std::fmod(a, b);
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


Status MathOps(const OnnxModel& model, const OnnxNode& node, Inputs in, std::span<OnnxValue> out) {
  const std::string& op = node.op_type;
  if (!Member(op, {"ReduceMean", "ReduceSum", "MatMul", "Gemm", "MatMulNBits"})) {
    return EvaluateShapeOp(model, node, in, out);
  }
  OnnxValue& o = out[0];
  o.shape_known = true;
  const OnnxValue& x = *in[0];
  o.type = x.type;
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
    const OnnxValue& y = Need(in, 1);
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
  if (op == "MatMulNBits") {  // ONNX Runtime's blockwise-quantized MatMul: [..., K] -> [..., N]
    const int64_t k = IntAttr(node, "K", -1), n = IntAttr(node, "N", -1);
    if (x.shape.empty() || x.shape.back() != k || n < 1 || n > kMaxDim) {
      return Fail("MatMulNBits K " + std::to_string(k) + ", N " + std::to_string(n) + " for input " + ShapeString(x.shape));
    }
    o.shape = x.shape;
    o.shape.back() = n;
    return Ok();
  }
  if (op == "Gemm") {
    const OnnxValue& y = Need(in, 1);
    if (x.shape.size() != 2 || y.shape.size() != 2) return Fail("Gemm takes matrices");
    const bool ta = IntAttr(node, "transA", 0) != 0, tb = IntAttr(node, "transB", 0) != 0;
    o.shape = {x.shape[ta ? 1 : 0], y.shape[tb ? 0 : 1]};
    if (x.shape[ta ? 0 : 1] != y.shape[tb ? 1 : 0]) return Fail("Gemm of " + ShapeString(x.shape) + " by " + ShapeString(y.shape));
    return Ok();
  }
  return Fail("Kite does not fold or infer shapes for op " + op);
}

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
                  "GreaterOrEqual", "And", "Or", "Max", "Min", "Mod"})) {
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
  if (op == "GroupQueryAttention") {  // ONNX Runtime's: out [b, t, h*d], presents [b, kv, past+t, d]
    const int64_t heads = IntAttr(node, "num_heads", 0), kv = IntAttr(node, "kv_num_heads", 0);
    if (in.size() < 5 || in[3] == nullptr || in[0]->shape.size() != 3 || in[3]->shape.size() != 4 ||
        heads < 1 || kv < 1 || in[0]->shape[2] % heads != 0 || out.size() < 3) {
      return Fail("GroupQueryAttention takes q [b, t, h*d] and a past [b, kv, past, d]");
    }
    out[0].type = in[0]->type;
    out[0].shape = in[0]->shape;
    const Shape& past = in[3]->shape;
    for (size_t o = 1; o < 3; ++o) {
      out[o].type = in[0]->type;
      out[o].shape = {past[0], kv, past[2] + in[0]->shape[1], in[0]->shape[2] / heads};
      out[o].shape_known = true;
    }
    out[0].shape_known = true;
    return Ok();
  }
  if (op == "SkipSimplifiedLayerNormalization") {  // norm(x + skip), mean, 1/rms, x + skip
    if (in.size() < 3 || in[1] == nullptr || in[1]->shape != in[0]->shape) {
      return Fail("SkipSimplifiedLayerNormalization takes input and skip of one shape, and gamma");
    }
    for (size_t o = 0; o < out.size(); ++o) {
      out[o].type = in[0]->type;
      out[o].shape = in[0]->shape;
      if (o == 1 || o == 2) out[o].shape.back() = 1;
      out[o].shape_known = true;
    }
    return Ok();
  }
  if (op == "Softmax" || op == "SimplifiedLayerNormalization" || op == "RotaryEmbedding") {
    out[0].type = in[0]->type;
    out[0].shape = in[0]->shape;
    out[0].shape_known = true;
    return Ok();
  }
  return MathOps(model, node, in, out);
}

}  // namespace kite
