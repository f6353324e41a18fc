#include "models/onnx_patterns.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace kite {

namespace {

bool OneOf(const OnnxNode* node, std::initializer_list<std::string_view> ops) {
  return node != nullptr && std::find(ops.begin(), ops.end(), node->op_type) != ops.end();
}

int64_t IntAttribute(const OnnxNode& node, std::string_view name, int64_t fallback) {
  const OnnxAttribute* a = node.Attribute(name);
  return a != nullptr && a->kind == OnnxAttribute::Kind::kInt ? a->i : fallback;
}

std::vector<int64_t> IntsAttribute(const OnnxNode& node, std::string_view name) {
  const OnnxAttribute* a = node.Attribute(name);
  return a != nullptr ? a->ints : std::vector<int64_t>{};
}

}  // namespace

OnnxMatcher::OnnxMatcher(const OnnxModel& model, const FoldedGraph& graph, OnnxProbe probe)
    : model_(model), graph_(graph), probe_(probe) {}

std::unexpected<Error> OnnxMatcher::Mismatch(size_t node, const std::string& why) const {
  return std::unexpected(Error{ErrorCode::kUnsupported,
                               "node " + model_.nodes()[node].Describe() + ": " + why});
}

std::string OnnxMatcher::Through(std::string_view value) {
  std::string v(value);
  // Bounded by the node count: a broken file may chain Identity nodes into a loop.
  for (size_t step = 0; step <= model_.nodes().size(); ++step) {
    const auto it = graph_.producer.find(v);
    if (it == graph_.producer.end() || graph_.folded[it->second] ||
        graph_.unknown.contains(it->second)) {
      return v;
    }
    const OnnxNode& node = model_.nodes()[it->second];
    const OnnxValue* in = node.inputs.empty() ? nullptr : Value(node.inputs[0]);
    const bool same_type_cast =
        node.op_type == "Cast" && in != nullptr &&
        IntAttribute(node, "to", -1) == static_cast<int64_t>(in->type);
    if (node.op_type != "Identity" && !same_type_cast && !WholeSlice(node)) return v;
    Take(it->second);
    v = node.inputs[0];
  }
  return v;
}

bool OnnxMatcher::WholeSlice(const OnnxNode& node) const {
  // transformers' `hidden_states[:, -num_logits_to_keep:, :]` with 0 to keep: every element, in
  // order (steps of 1), so the same value.
  if (node.op_type != "Slice" || node.inputs.empty() || node.outputs.empty()) return false;
  const OnnxValue* in = Value(node.inputs[0]);
  const OnnxValue* out = Value(node.outputs[0]);
  if (in == nullptr || out == nullptr || in->shape != out->shape) return false;
  if (node.inputs.size() > 4 && !node.inputs[4].empty()) {
    const OnnxValue* steps = Value(node.inputs[4]);
    if (steps == nullptr || !steps->data) return false;
    for (double step : *steps->data) {
      if (step != 1) return false;
    }
  }
  return true;
}

const OnnxNode* OnnxMatcher::Producer(std::string_view value, size_t* index) {
  const std::string v = Through(value);
  const auto it = graph_.producer.find(v);
  // A node whose evaluation failed has not had its inputs counted: no pattern reads it.
  if (it == graph_.producer.end() || graph_.folded[it->second] ||
      graph_.unknown.contains(it->second)) {
    return nullptr;
  }
  if (index != nullptr) *index = it->second;
  return &model_.nodes()[it->second];
}

void OnnxMatcher::Commit(size_t mark, std::string kite_op, int32_t layer) {
  OnnxFusion fusion{std::move(kite_op), layer, {}};
  std::set<size_t> owned;
  for (const OnnxFusion& f : fusions_) owned.insert(f.nodes.begin(), f.nodes.end());
  for (size_t i = mark; i < taken_.size(); ++i) {
    if (owned.insert(taken_[i]).second) fusion.nodes.push_back(taken_[i]);
  }
  std::sort(fusion.nodes.begin(), fusion.nodes.end());
  fusions_.push_back(std::move(fusion));
  taken_.resize(mark);
}

std::vector<size_t> OnnxMatcher::Unmapped() const {
  std::set<size_t> owned;
  for (const OnnxFusion& f : fusions_) owned.insert(f.nodes.begin(), f.nodes.end());
  std::vector<size_t> out;
  for (size_t n = 0; n < model_.nodes().size(); ++n) {
    if (!graph_.folded[n] && !owned.contains(n)) out.push_back(n);
  }
  return out;
}

Result<OnnxLinear> OnnxMatcher::Linear(std::string_view value) {
  size_t n = 0;
  const OnnxNode* node = Producer(value, &n);
  if (node == nullptr) return Unsupported("value '" + std::string(value) + "' is not computed by a linear layer");
  OnnxLinear out;
  auto stored = [&](const std::string& name, size_t rank) -> Result<OnnxWeight> {
    const OnnxTensor* t = model_.FindInitializer(name);
    if (t == nullptr || t->shape.size() != rank) {
      return Mismatch(n, "'" + name + "' is not a stored weight of rank " + std::to_string(rank));
    }
    return OnnxWeight{name, false};
  };
  if (node->op_type == "Add") {
    Take(n);
    for (int side = 0; side < 2; ++side) {
      const OnnxValue* c = Value(node->inputs[side]);
      if (c == nullptr || !c->constant() || c->shape.size() != 1) continue;
      out = KITE_TRY(Linear(node->inputs[1 - side]));
      if (out.bias) return Mismatch(n, "a second bias");
      out.bias = KITE_TRY(stored(node->inputs[side], 1));
      if (c->shape[0] != out.out) return Mismatch(n, "bias of " + std::to_string(c->shape[0]) + " values for " + std::to_string(out.out) + " outputs");
      return out;
    }
    return Mismatch(n, "an Add that is not a bias");
  }
  if (node->op_type == "MatMul") {
    Take(n);
    // B is [in, out]: a stored weight, or a Transpose of Kite's [out, in] the exporter did not
    // fold (a tied lm_head reading the embedding).
    // (Small enough to fold, the Transpose is still the exporter's: read the stored weight.)
    const auto made = graph_.producer.find(node->inputs[1]);
    const size_t t_index = made != graph_.producer.end() ? made->second : 0;
    const OnnxNode* transpose = made != graph_.producer.end() ? &model_.nodes()[t_index] : nullptr;
    const bool transposed = transpose != nullptr && transpose->op_type == "Transpose" &&
                            !graph_.unknown.contains(t_index) &&
                            model_.FindInitializer(transpose->inputs[0]) != nullptr;
    if (transposed) {
      const OnnxAttribute* perm = transpose->Attribute("perm");
      if (perm != nullptr && perm->ints != std::vector<int64_t>{1, 0}) {
        return Mismatch(t_index, "a weight transposed other than [1, 0]");
      }
      Take(t_index);
    }
    const std::string& name = transposed ? transpose->inputs[0] : node->inputs[1];
    out.weight = KITE_TRY(stored(name, 2));
    out.weight.transpose = !transposed;
    const OnnxTensor* t = model_.FindInitializer(name);
    out.in = t->shape[transposed ? 1 : 0];
    out.out = t->shape[transposed ? 0 : 1];
    out.input = Through(node->inputs[0]);
    return out;
  }
  if (node->op_type == "MatMulNBits") {
    Take(n);
    const int64_t k = IntAttribute(*node, "K", 0), n_out = IntAttribute(*node, "N", 0);
    const int64_t block = IntAttribute(*node, "block_size", 0);
    if (IntAttribute(*node, "bits", 4) != 4 || block < 16 || (block & (block - 1)) != 0 ||
        k < 1 || k > (int64_t{1} << 24) || n_out < 1 || n_out > (int64_t{1} << 24) ||
        k % block != 0) {
      return Mismatch(n, "Kite reads 4-bit MatMulNBits with a power-of-two block_size dividing K");
    }
    if (node->inputs.size() > 3 && !node->inputs[3].empty()) {
      return Mismatch(n, "zero points (asymmetric int4) are not read; symmetric exports have none");
    }
    if (node->inputs.size() < 3) return Mismatch(n, "expected the codes and their scales");
    const OnnxTensor* codes = model_.FindInitializer(node->inputs[1]);
    const OnnxTensor* scales = model_.FindInitializer(node->inputs[2]);
    if (codes == nullptr || codes->type != OnnxType::kUint8 ||
        codes->data.size() != static_cast<uint64_t>(n_out * k / 2) || scales == nullptr ||
        scales->type != OnnxType::kFloat ||
        scales->data.size() != static_cast<uint64_t>(n_out * (k / block)) * 4) {
      return Mismatch(n, "codes or scales are not stored UINT8 [N, K / block, block / 2] and "
                         "FLOAT [N * K / block]");
    }
    out.weight = {node->inputs[1], false, node->inputs[2], k, n_out, block};
    out.in = k;
    out.out = n_out;
    out.input = Through(node->inputs[0]);
    return out;
  }
  if (node->op_type == "Gemm") {
    Take(n);
    if (IntAttribute(*node, "transA", 0) != 0) return Mismatch(n, "transA is set");
    const OnnxAttribute* alpha = node->Attribute("alpha");
    const OnnxAttribute* beta = node->Attribute("beta");
    if ((alpha != nullptr && alpha->f != 1.0f) || (beta != nullptr && beta->f != 1.0f)) {
      return Mismatch(n, "alpha or beta is not 1");
    }
    out.weight = KITE_TRY(stored(node->inputs[1], 2));
    out.weight.transpose = IntAttribute(*node, "transB", 0) == 0;
    const OnnxTensor* t = model_.FindInitializer(node->inputs[1]);
    out.in = t->shape[out.weight.transpose ? 0 : 1];
    out.out = t->shape[out.weight.transpose ? 1 : 0];
    if (node->inputs.size() > 2 && !node->inputs[2].empty()) out.bias = KITE_TRY(stored(node->inputs[2], 1));
    out.input = Through(node->inputs[0]);
    return out;
  }
  return Mismatch(n, "expected a linear layer (MatMul by a stored weight, Gemm or MatMulNBits)");
}

Result<OnnxRmsNorm> OnnxMatcher::RmsNorm(std::string_view value) {
  size_t n = 0;
  const OnnxNode* node = Producer(value, &n);
  if (node == nullptr) return Unsupported("value '" + std::string(value) + "' is not computed by RMSNorm");
  OnnxRmsNorm out;
  if (node->op_type == "SimplifiedLayerNormalization") {  // ONNX Runtime's fused RMSNorm
    Take(n);
    const OnnxAttribute* eps = node->Attribute("epsilon");
    out.eps = eps != nullptr ? eps->f : 1e-5;
    if (IntAttribute(*node, "axis", -1) != -1) return Mismatch(n, "normalises an axis other than the last");
    if (node->inputs.size() < 2) return Mismatch(n, "no scale input");
    out.weight = {node->inputs[1], false};
    out.input = Through(node->inputs[0]);
    return out;
  }
  if (node->op_type == "SkipSimplifiedLayerNormalization" && node->domain == "com.microsoft") {
    // ONNX Runtime's RMSNorm of input + skip, the sum its fourth output: the residual Add fused
    // in (models/onnx_import.cpp reads that output as the Add).
    Take(n);
    const OnnxAttribute* eps = node->Attribute("epsilon");
    out.eps = eps != nullptr ? eps->f : 1e-5;
    if (node->inputs.size() < 3 || node->outputs.size() < 4 || node->outputs[3].empty() ||
        (node->inputs.size() > 3 && !node->inputs[3].empty()) || Through(value) != node->outputs[0]) {
      return Mismatch(n, "expected the normed output of input + skip (no bias) and the sum as an output");
    }
    out.weight = {node->inputs[2], false};
    out.input = node->outputs[3];
    return out;
  }
  if (node->op_type != "Mul") return Mismatch(n, "expected RMSNorm's final Mul by its weight");
  Take(n);
  int side = -1;
  for (int s = 0; s < 2; ++s) {
    const OnnxTensor* t = model_.FindInitializer(node->inputs[s]);
    if (t != nullptr && t->shape.size() == 1) side = s;
  }
  if (side < 0) return Mismatch(n, "neither operand is a stored 1-D weight");
  out.weight = {node->inputs[side], false};
  // x * (1 / sqrt(mean(x^2) + eps)), the operands in either order.
  size_t m = 0;
  const OnnxNode* scaled = Producer(node->inputs[1 - side], &m);
  if (!OneOf(scaled, {"Mul"})) return Mismatch(n, "expected x times its inverse RMS");
  Take(m);
  for (int s = 0; s < 2; ++s) {
    size_t d = 0;
    const OnnxNode* inverse = Producer(scaled->inputs[s], &d);
    if (!OneOf(inverse, {"Div", "Reciprocal"})) continue;
    Take(d);
    std::string root_value = inverse->inputs.back();
    if (inverse->op_type == "Div") {
      const OnnxValue* one = Value(inverse->inputs[0]);
      if (one == nullptr || one->Scalar() != 1.0) return Mismatch(d, "expected 1 / sqrt(...)");
    }
    size_t r = 0, a = 0, mean = 0, p = 0;
    const OnnxNode* root = Producer(root_value, &r);
    if (!OneOf(root, {"Sqrt"})) return Mismatch(d, "expected the square root of the mean square");
    Take(r);
    const OnnxNode* add = Producer(root->inputs[0], &a);
    if (!OneOf(add, {"Add"})) return Mismatch(r, "expected mean(x^2) + eps under the root");
    Take(a);
    int eps_side = -1;
    for (int e = 0; e < 2; ++e) {
      const OnnxValue* c = Value(add->inputs[e]);
      if (c != nullptr && c->Scalar()) eps_side = e, out.eps = *c->Scalar();
    }
    if (eps_side < 0 || !(out.eps > 0)) return Mismatch(a, "eps is not a positive constant");
    const OnnxNode* reduce = Producer(add->inputs[1 - eps_side], &mean);
    if (!OneOf(reduce, {"ReduceMean"})) return Mismatch(a, "expected the mean of x^2");
    Take(mean);
    std::vector<int64_t> axes = IntsAttribute(*reduce, "axes");
    if (axes.empty() && reduce->inputs.size() > 1) {
      if (const OnnxValue* v = Value(reduce->inputs[1]); v != nullptr && v->data) {
        for (double x : *v->data) axes.push_back(static_cast<int64_t>(x));
      }
    }
    const OnnxValue* reduced = Value(reduce->inputs[0]);
    const int64_t rank = reduced != nullptr ? static_cast<int64_t>(reduced->shape.size()) : 0;
    if (axes.size() != 1 || (axes[0] != -1 && axes[0] != rank - 1) ||
        IntAttribute(*reduce, "keepdims", 1) != 1) {
      return Mismatch(mean, "expected the mean over the last axis, dimensions kept");
    }
    const OnnxNode* square = Producer(reduce->inputs[0], &p);
    if (!OneOf(square, {"Pow", "Mul"})) return Mismatch(mean, "expected x^2");
    Take(p);
    const std::string x = Through(square->inputs[0]);
    if (square->op_type == "Pow") {
      const OnnxValue* two = Value(square->inputs[1]);
      if (two == nullptr || two->Scalar() != 2.0) return Mismatch(p, "the exponent is not 2");
    } else if (Through(square->inputs[1]) != x) {
      return Mismatch(p, "expected x * x");
    }
    if (Through(scaled->inputs[1 - s]) != x) {
      return Mismatch(m, "the value scaled is not the one whose RMS was taken");
    }
    out.input = x;
    return out;
  }
  return Mismatch(m, "neither operand is 1 / sqrt(mean(x^2) + eps)");
}

Result<OnnxSwiGlu> OnnxMatcher::SwiGlu(std::string_view value) {
  OnnxSwiGlu out;
  out.down = KITE_TRY(Linear(value));
  size_t n = 0;
  const OnnxNode* product = Producer(out.down.input, &n);
  if (!OneOf(product, {"Mul"})) {
    return Unsupported("value '" + out.down.input + "' is not silu(gate) * up");
  }
  Take(n);
  for (int side = 0; side < 2; ++side) {
    size_t s = 0, g = 0;
    const OnnxNode* silu = Producer(product->inputs[side], &s);
    if (!OneOf(silu, {"Mul"})) continue;
    // silu(g) = g * sigmoid(g), the operands in either order.
    for (int k = 0; k < 2; ++k) {
      const OnnxNode* sigmoid = Producer(silu->inputs[k], &g);
      if (!OneOf(sigmoid, {"Sigmoid"})) continue;
      const std::string gate = Through(silu->inputs[1 - k]);
      if (Through(sigmoid->inputs[0]) != gate) return Mismatch(g, "sigmoid of another value than the gate");
      Take(s);
      Take(g);
      out.gate = KITE_TRY(Linear(gate));
      out.up = KITE_TRY(Linear(product->inputs[1 - side]));
      if (out.gate.input != out.up.input) return Mismatch(n, "gate and up read different inputs");
      out.input = out.gate.input;
      return out;
    }
  }
  return Mismatch(n, "expected silu(gate) * up (gate * Sigmoid(gate), times up)");
}

}  // namespace kite
