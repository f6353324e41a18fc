// OnnxMatcher::Attention: eager causal attention as Hugging Face's Llama code exports it —
//   q, k, v = Linear(x) reshaped to [b, t, heads, d] and transposed to [b, heads, t, d]
//   q, k    = q * cos + rotate_half(q) * sin      (rotate_half: Concat(-x[d/2:], x[:d/2]))
//   k, v    = Concat(past, k|v) on the sequence axis      (only in a graph with a KV cache)
//   k, v    = repeat_kv: Unsqueeze, Expand, Reshape to the query heads (GQA)
//   p       = Softmax(q @ k^T / sqrt(d) + causal mask)   (or (q * s) @ (k^T * s), s = d^-1/4)
//   out     = Linear(Reshape(Transpose(p @ v)))
// with the RoPE tables and the mask folded to constants for the probe positions and checked
// against what Kite's rope and attention ops compute.
#include <cmath>
#include <cstring>

#include "models/onnx_patterns.h"
#include "tensor/tensor.h"

namespace kite {

namespace {

// A masked score is at most this (exporters write -inf, the float minimum, -1e9, ...).
constexpr double kMaskedBelow = -1e4;
// RoPE tables: f32 cos/sin of f32 angles against Kite's frequencies in double.
constexpr double kRopeTolerance = 2e-4;

bool Is(const OnnxNode* node, std::string_view op) { return node != nullptr && node->op_type == op; }

std::vector<int64_t> Perm(const OnnxNode& node) {
  const OnnxAttribute* a = node.Attribute("perm");
  return a != nullptr ? a->ints : std::vector<int64_t>{};
}

int64_t IntAttr(const OnnxNode& node, std::string_view name, int64_t fallback) {
  const OnnxAttribute* a = node.Attribute(name);
  return a != nullptr && a->kind == OnnxAttribute::Kind::kInt ? a->i : fallback;
}

}  // namespace

Status OnnxMatcher::CheckRopeTables(const OnnxValue& cos, const OnnxValue& sin, size_t node,
                                    int32_t head_dim, RopeAttrs* rope) const {
  const int64_t t_count = probe_.tokens, d = head_dim;
  if (!cos.data || !sin.data || cos.count() != t_count * d || sin.count() != t_count * d ||
      cos.shape.empty() || cos.shape.back() != d) {
    return Mismatch(node, "the RoPE tables are not constants of " + std::to_string(t_count) +
                              " positions by " + std::to_string(d) + " (got " +
                              ShapeString(cos.shape) + ")");
  }
  // Row of position 1: its angles are the inverse frequencies themselves (all below pi).
  const int64_t row = 1 - probe_.past;
  const int64_t half = d / 2;
  std::vector<double> freq(half);
  for (int64_t i = 0; i < half; ++i) {
    freq[i] = std::atan2((*sin.data)[row * d + i], (*cos.data)[row * d + i]);
  }
  if (std::fabs(freq[0] - 1.0) > 1e-4) {
    return Mismatch(node, "RoPE pair 0 turns by " + std::to_string(freq[0]) +
                              " per position, not 1: scaled RoPE frequencies are not recognised");
  }
  // theta from the least-squares fit of log f_i = -(2i/d) log theta, rounded to 6 digits.
  double num = 0, den = 0;
  for (int64_t i = 1; i < half; ++i) {
    const double e = 2.0 * i / d;
    num += -e * std::log(freq[i]);
    den += e * e;
  }
  double theta = half > 1 ? std::exp(num / den) : 10000.0;
  const double scale = std::pow(10.0, std::floor(std::log10(theta)) - 5);
  theta = std::round(theta / scale) * scale;
  rope->mode = RopeMode::kNeox;
  rope->rotary_dim = head_dim;
  rope->theta = static_cast<float>(theta);
  for (int64_t t = 0; t < t_count; ++t) {
    const double position = static_cast<double>(probe_.past + t);
    for (int64_t i = 0; i < d; ++i) {
      const double angle = position * RopeInverseFrequency(*rope, i % half);
      const double c = (*cos.data)[t * d + i], s = (*sin.data)[t * d + i];
      if (std::fabs(c - std::cos(angle)) > kRopeTolerance ||
          std::fabs(s - std::sin(angle)) > kRopeTolerance) {
        return Mismatch(node, "RoPE table at position " + std::to_string(t + probe_.past) +
                                  ", element " + std::to_string(i) + " is (" + std::to_string(c) +
                                  ", " + std::to_string(s) +
                                  "), not rotate-half RoPE with base " + std::to_string(theta));
      }
    }
  }
  return Ok();
}

Status OnnxMatcher::CheckCausalMask(const OnnxValue& mask, size_t node) const {
  const int64_t t_count = probe_.tokens, s_count = probe_.past + probe_.tokens;
  if (!mask.data || mask.count() != t_count * s_count || mask.shape.empty() ||
      mask.shape.back() != s_count) {
    return Mismatch(node, "the attention mask is not a constant of " + std::to_string(t_count) +
                              " queries by " + std::to_string(s_count) + " keys (got " +
                              ShapeString(mask.shape) + ")");
  }
  for (int64_t q = 0; q < t_count; ++q) {
    for (int64_t k = 0; k < s_count; ++k) {
      const double v = (*mask.data)[q * s_count + k];
      const bool allowed = k <= probe_.past + q;
      if (allowed ? v != 0 : !(v <= kMaskedBelow)) {
        return Mismatch(node, "the attention mask is not causal: query " + std::to_string(q) +
                                  ", key " + std::to_string(k) + " holds " + std::to_string(v));
      }
    }
  }
  return Ok();
}

Result<std::string> OnnxMatcher::Rope(std::string_view value, const OnnxNode& at,
                                      size_t at_index, int32_t head_dim, RopeAttrs* rope) {
  size_t n = 0;
  const OnnxNode* add = Producer(value, &n);
  if (Is(add, "RotaryEmbedding") && add->domain == "com.microsoft") return OrtRope(*add, n, head_dim, rope);
  if (!Is(add, "Add")) return Mismatch(at_index, "its input is not rotate-half RoPE (x * cos + rotate_half(x) * sin)");
  Take(n);
  for (int side = 0; side < 2; ++side) {
    size_t a = 0, b = 0;
    const OnnxNode* plain = Producer(add->inputs[side], &a);
    const OnnxNode* rotated = Producer(add->inputs[1 - side], &b);
    if (!Is(plain, "Mul") || !Is(rotated, "Mul")) continue;
    // Each Mul: a live operand times a constant table, in either order.
    auto split = [&](const OnnxNode& mul, const OnnxValue** table) -> std::string {
      for (int k = 0; k < 2; ++k) {
        const OnnxValue* c = Value(mul.inputs[k]);
        if (c != nullptr && c->data) {
          *table = c;
          return Through(mul.inputs[1 - k]);
        }
      }
      return "";
    };
    const OnnxValue *cos = nullptr, *sin = nullptr;
    const std::string x = split(*plain, &cos);
    const std::string r = split(*rotated, &sin);
    if (x.empty() || r.empty()) continue;
    size_t c = 0, ng = 0, s1 = 0, s2 = 0;
    const OnnxNode* concat = Producer(r, &c);
    if (!Is(concat, "Concat") || concat->inputs.size() != 2) continue;
    const OnnxNode* neg = Producer(concat->inputs[0], &ng);
    const OnnxNode* low = Producer(concat->inputs[1], &s2);
    if (!Is(neg, "Neg") || !Is(low, "Slice")) continue;
    const OnnxNode* high = Producer(neg->inputs[0], &s1);
    if (!Is(high, "Slice")) continue;
    Take(a), Take(b), Take(c), Take(ng), Take(s1), Take(s2);
    // rotate_half(x) = Concat(-x[..., d/2:], x[..., :d/2]) on the last axis.
    const OnnxValue* xv = Value(x);
    const OnnxValue* hv = Value(neg->inputs[0]);
    const OnnxValue* lv = Value(concat->inputs[1]);
    const int64_t d = head_dim;
    const int64_t rank = xv != nullptr ? static_cast<int64_t>(xv->shape.size()) : 0;
    const int64_t axis = IntAttr(*concat, "axis", 0);
    if (Through(high->inputs[0]) != x || Through(low->inputs[0]) != x || xv == nullptr ||
        xv->shape.back() != d || (axis != -1 && axis != rank - 1) || hv == nullptr ||
        lv == nullptr || hv->shape.back() != d / 2 || lv->shape.back() != d / 2) {
      return Mismatch(c, "not rotate_half of the value RoPE multiplies by cos");
    }
    const OnnxValue* start_high = Value(high->inputs[1]);
    const OnnxValue* start_low = Value(low->inputs[1]);
    if (start_high == nullptr || start_low == nullptr ||
        !(start_high->Scalar() == d / 2 || start_high->Scalar() == -d / 2) ||
        start_low->Scalar() != 0) {
      return Mismatch(s1, "the halves of rotate_half are not x[d/2:] and x[:d/2]");
    }
    KITE_RETURN_IF_ERROR(CheckRopeTables(*cos, *sin, a, head_dim, rope));
    return x;
  }
  return Mismatch(n, "not x * cos + rotate_half(x) * sin");
}

Result<std::string> OnnxMatcher::OrtRope(const OnnxNode& node, size_t index, int32_t head_dim,
                                         RopeAttrs* rope) {
  // RotaryEmbedding(x [b, heads, t, d], position_ids, cos_cache, sin_cache [positions, d / 2]).
  Take(index);
  const OnnxAttribute* interleaved = node.Attribute("interleaved");
  const OnnxAttribute* rotary_dim = node.Attribute("rotary_embedding_dim");
  if ((interleaved != nullptr && interleaved->i != 0) ||
      (rotary_dim != nullptr && rotary_dim->i != 0 && rotary_dim->i != head_dim)) {
    return Mismatch(index, "Kite reads RotaryEmbedding rotating halves over the whole head");
  }
  if (node.inputs.size() < 4 || Through(node.inputs[1]) != "position_ids") {
    return Mismatch(index, "expected the graph's position_ids and cos/sin caches as inputs");
  }
  KITE_RETURN_IF_ERROR(CheckRopeCaches(Value(node.inputs[2]), Value(node.inputs[3]), index, head_dim, rope));
  return Through(node.inputs[0]);
}

Status OnnxMatcher::CheckRopeCaches(const OnnxValue* cos, const OnnxValue* sin, size_t index,
                                    int32_t head_dim, RopeAttrs* rope) const {
  const OnnxValue* cache[2] = {cos, sin};
  const int64_t half = head_dim / 2, tokens = probe_.tokens;
  OnnxValue tables[2];
  for (int c = 0; c < 2; ++c) {
    const OnnxValue* v = cache[c];
    if (v == nullptr || v->shape.size() != 2 || v->shape[1] != half || v->shape[0] < probe_.past + tokens ||
        (!v->data && (v->weight == nullptr || v->weight->type != OnnxType::kFloat))) {
      return Mismatch(index, "the cos/sin caches are not constants [positions, head_dim / 2]");
    }
    // The rows of the probe's positions, both halves, as the decomposed form's tables.
    tables[c].shape = {tokens, head_dim};
    std::vector<double> rows;
    for (int64_t t = 0; t < tokens; ++t) {
      for (int64_t i = 0; i < head_dim; ++i) {
        const int64_t at = (probe_.past + t) * half + i % half;
        float element = 0;
        if (!v->data) std::memcpy(&element, v->weight->data.data() + at * 4, 4);
        rows.push_back(v->data ? (*v->data)[at] : element);
      }
    }
    tables[c].data = std::move(rows);
  }
  return CheckRopeTables(tables[0], tables[1], index, head_dim, rope);
}

Status OnnxMatcher::OrtGroupQueryAttention(const OnnxNode& node, size_t index, OnnxAttention* out) {
  // GroupQueryAttention(q [b, t, h*d], k, v [b, t, kv*d], past_key, past_value [b, kv, past, d],
  // seqlens_k [b], total_sequence_length[, cos_cache, sin_cache]) -> out, present_key, present_value.
  Take(index);
  auto attribute = [&](std::string_view name) -> const OnnxAttribute* { return node.Attribute(name); };
  const int64_t heads = attribute("num_heads") ? attribute("num_heads")->i : 0;
  const int64_t kv = attribute("kv_num_heads") ? attribute("kv_num_heads")->i : 0;
  const bool rotary = attribute("do_rotary") != nullptr && attribute("do_rotary")->i != 0;
  const OnnxValue* q = Value(node.inputs[0]);
  if (node.inputs.size() < 7 || node.outputs.size() < 3 || q == nullptr || heads < 1 || kv < 1 ||
      heads % kv != 0 || q->shape.size() != 3 || q->shape[2] % heads != 0) {
    return Mismatch(index, "expected q, k, v, the past, seqlens_k and the total length, and "
                           "num_heads a multiple of kv_num_heads");
  }
  if ((attribute("rotary_interleaved") && attribute("rotary_interleaved")->i != 0) ||
      (attribute("local_window_size") && attribute("local_window_size")->i != -1) ||
      (attribute("softcap") && attribute("softcap")->f != 0) ||
      (attribute("scale") && attribute("scale")->f != 0 &&
       std::fabs(attribute("scale")->f * std::sqrt(q->shape[2] / heads) - 1) > 1e-6)) {
    return Mismatch(index, "Kite reads GroupQueryAttention with rotate-half RoPE, no window, no "
                           "soft-cap and the scale 1/sqrt(head_dim)");
  }
  out->n_heads = static_cast<int32_t>(heads);
  out->n_kv_heads = static_cast<int32_t>(kv);
  out->head_dim = static_cast<int32_t>(q->shape[2] / heads);
  // The lengths GQA is told: every query sees the whole past and itself causally (batch 1).
  const OnnxValue* seqlens = Value(node.inputs[5]);
  const OnnxValue* total = Value(node.inputs[6]);
  const int64_t length = probe_.past + probe_.tokens;
  if (seqlens == nullptr || total == nullptr || seqlens->Scalar() != length - 1 || total->Scalar() != length) {
    return Mismatch(index, "seqlens_k and total_sequence_length do not fold to the whole sequence");
  }
  std::string q_in = Through(node.inputs[0]), k_in = Through(node.inputs[1]);
  if (rotary) {
    if (node.inputs.size() < 9) return Mismatch(index, "do_rotary without cos/sin caches");
    KITE_RETURN_IF_ERROR(CheckRopeCaches(Value(node.inputs[7]), Value(node.inputs[8]), index,
                                         out->head_dim, &out->rope));
  } else {
    q_in = KITE_TRY(Rope(q_in, node, index, out->head_dim, &out->rope));
    RopeAttrs k_rope;
    k_in = KITE_TRY(Rope(k_in, node, index, out->head_dim, &k_rope));
    if (k_rope.theta != out->rope.theta) return Mismatch(index, "q and k turn by different RoPE bases");
  }
  out->q = KITE_TRY(Linear(q_in));
  out->k = KITE_TRY(Linear(k_in));
  out->v = KITE_TRY(Linear(node.inputs[2]));
  if (out->q.out != heads * out->head_dim || out->k.out != kv * out->head_dim ||
      out->v.out != kv * out->head_dim) {
    return Mismatch(index, "the projections' sizes are not num_heads and kv_num_heads heads");
  }
  if (out->q.input != out->k.input || out->q.input != out->v.input) {
    return Mismatch(index, "q, k and v are projected from different values");
  }
  for (int i = 3; i < 5; ++i) {
    const std::string& past = node.inputs[i];
    if (past.empty() || graph_.producer.contains(past) || model_.FindInitializer(past) != nullptr) {
      return Mismatch(index, "the past keys/values '" + past + "' are not a graph input");
    }
  }
  out->past_key = node.inputs[3];
  out->past_value = node.inputs[4];
  out->present_key = node.outputs[1];
  out->present_value = node.outputs[2];
  out->input = out->q.input;
  return Ok();
}

std::string OnnxMatcher::RepeatKv(std::string_view value) {
  // [b, kv, s, d] -> Unsqueeze(2) -> Expand [b, kv, rep, s, d] -> Reshape [b, kv * rep, s, d].
  const std::string v = Through(value);
  size_t r = 0, e = 0, u = 0;
  const OnnxNode* reshape = Producer(v, &r);
  if (!Is(reshape, "Reshape")) return v;
  const OnnxNode* expand = Producer(reshape->inputs[0], &e);
  if (!Is(expand, "Expand")) return v;
  const OnnxNode* unsqueeze = Producer(expand->inputs[0], &u);
  if (!Is(unsqueeze, "Unsqueeze")) return v;
  const OnnxValue* in = Value(unsqueeze->inputs[0]);
  const OnnxValue* mid = Value(unsqueeze->outputs[0]);
  const OnnxValue* out = Value(reshape->outputs[0]);
  if (in == nullptr || mid == nullptr || out == nullptr || in->shape.size() != 4 ||
      mid->shape.size() != 5 || mid->shape[2] != 1 || out->shape.size() != 4 ||
      out->shape[0] != in->shape[0] || out->shape[2] != in->shape[2] ||
      out->shape[3] != in->shape[3] || out->shape[1] % in->shape[1] != 0) {
    return v;
  }
  Take(r), Take(e), Take(u);
  return Through(unsqueeze->inputs[0]);
}

Result<OnnxAttention> OnnxMatcher::Attention(std::string_view value) {
  OnnxAttention out;
  out.o = KITE_TRY(Linear(value));
  size_t n = 0;
  // [b, t, h * d] <- Reshape <- Transpose(0, 2, 1, 3) <- MatMul(probs, v)
  const OnnxNode* merge = Producer(out.o.input, &n);
  if (Is(merge, "GroupQueryAttention") && merge->domain == "com.microsoft") {
    KITE_RETURN_IF_ERROR(OrtGroupQueryAttention(*merge, n, &out));
    return out;
  }
  if (!Is(merge, "Reshape")) return Unsupported("value '" + out.o.input + "' is not attention's merged heads");
  Take(n);
  size_t tr = 0, pv = 0, sm = 0;
  const OnnxNode* transpose = Producer(merge->inputs[0], &tr);
  if (!Is(transpose, "Transpose") || Perm(*transpose) != std::vector<int64_t>{0, 2, 1, 3}) {
    return Mismatch(n, "expected the heads transposed back (perm 0, 2, 1, 3)");
  }
  Take(tr);
  const OnnxNode* weighted = Producer(transpose->inputs[0], &pv);
  if (!Is(weighted, "MatMul")) return Mismatch(tr, "expected probabilities @ v");
  Take(pv);
  const OnnxNode* softmax = Producer(weighted->inputs[0], &sm);
  if (!Is(softmax, "Softmax")) return Mismatch(pv, "expected Softmax(scores) @ v");
  Take(sm);
  const OnnxValue* probs = Value(softmax->outputs[0]);
  const int64_t axis = IntAttr(*softmax, "axis", -1);
  if (probs == nullptr || probs->shape.size() != 4 || (axis != -1 && axis != 3)) {
    return Mismatch(sm, "expected a softmax over the keys (the last of 4 axes)");
  }
  // scores (+ mask), scaled by a constant.
  size_t mk = 0, sc = 0, qk = 0;
  std::string scores = Through(softmax->inputs[0]);
  const OnnxNode* masked = Producer(scores, &mk);
  const OnnxValue* mask = nullptr;
  if (Is(masked, "Add")) {
    for (int side = 0; side < 2 && mask == nullptr; ++side) {
      const OnnxValue* c = Value(masked->inputs[side]);
      if (c != nullptr && c->data) mask = c, scores = Through(masked->inputs[1 - side]);
    }
  }
  if (mask == nullptr) return Mismatch(sm, "no constant mask is added to the scores: the attention would not be causal");
  Take(mk);
  KITE_RETURN_IF_ERROR(CheckCausalMask(*mask, mk));
  double scale = 1;
  const OnnxNode* scaled = Producer(scores, &sc);
  if (Is(scaled, "Div") || Is(scaled, "Mul")) {
    const OnnxValue* c = Value(scaled->inputs[1]);
    if (c == nullptr || !c->Scalar()) return Mismatch(sc, "the scores are scaled by a value that is not a constant scalar");
    scale = scaled->op_type == "Div" ? 1 / *c->Scalar() : *c->Scalar();
    Take(sc);
    scores = Through(scaled->inputs[0]);
  }
  const OnnxNode* dot = Producer(scores, &qk);
  if (!Is(dot, "MatMul")) return Mismatch(mk, "expected q @ k^T under the mask");
  Take(qk);
  // torch 2 decomposes scaled_dot_product_attention with q and k^T each scaled by the square
  // root of the scale before their product.
  auto unscale = [&](std::string_view operand) {
    size_t s = 0;
    const OnnxNode* mul = Producer(operand, &s);
    if (Is(mul, "Mul")) {
      for (int side = 0; side < 2; ++side) {
        const OnnxValue* c = Value(mul->inputs[side]);
        if (c != nullptr && c->Scalar()) {
          scale *= *c->Scalar();
          Take(s);
          return Through(mul->inputs[1 - side]);
        }
      }
    }
    return Through(operand);
  };
  const std::string q_operand = unscale(dot->inputs[0]);
  const std::string k_operand = unscale(dot->inputs[1]);
  // k^T: Transpose(0, 1, 3, 2) of the repeated keys.
  size_t kt = 0;
  const OnnxNode* k_transpose = Producer(k_operand, &kt);
  if (!Is(k_transpose, "Transpose") || Perm(*k_transpose) != std::vector<int64_t>{0, 1, 3, 2}) {
    return Mismatch(qk, "expected q @ k transposed (perm 0, 1, 3, 2)");
  }
  Take(kt);
  const OnnxValue* q_value = Value(q_operand);
  if (q_value == nullptr || q_value->shape.size() != 4) return Mismatch(qk, "q is not [batch, heads, tokens, head_dim]");
  out.n_heads = static_cast<int32_t>(q_value->shape[1]);
  out.head_dim = static_cast<int32_t>(q_value->shape[3]);
  if (std::fabs(scale * std::sqrt(static_cast<double>(out.head_dim)) - 1) > 1e-6) {
    return Mismatch(qk, "attention scale " + std::to_string(scale) + ", Kite's is 1/sqrt(" +
                            std::to_string(out.head_dim) + ")");
  }
  // The cache: Concat(past, new) on the sequence axis, the result a graph output (present).
  auto cached = [&](std::string_view value, std::string* past, std::string* present) -> Result<std::string> {
    const std::string v = RepeatKv(value);
    size_t c = 0;
    const OnnxNode* concat = Producer(v, &c);
    if (!Is(concat, "Concat") || concat->inputs.size() != 2) return v;
    const int64_t axis = IntAttr(*concat, "axis", 0);
    if (axis != 2 && axis != -2) return Mismatch(c, "the cache is not extended on the sequence axis");
    const std::string& p = concat->inputs[0];
    if (graph_.producer.contains(p) || model_.FindInitializer(p) != nullptr) {
      return Mismatch(c, "the past keys/values '" + p + "' are not a graph input");
    }
    Take(c);
    *past = p;
    *present = concat->outputs[0];
    return Through(concat->inputs[1]);
  };
  // Heads of a projection: Linear -> Reshape [b, t, heads, d] -> Transpose(0, 2, 1, 3).
  auto heads = [&](std::string_view value, OnnxLinear* linear, int32_t* count) -> Status {
    size_t t = 0, r = 0;
    const OnnxNode* split_t = Producer(value, &t);
    if (!Is(split_t, "Transpose") || Perm(*split_t) != std::vector<int64_t>{0, 2, 1, 3}) {
      return Unsupported("value '" + std::string(value) + "' is not a projection split into heads");
    }
    const OnnxNode* split = Producer(split_t->inputs[0], &r);
    const OnnxValue* shape = split != nullptr ? Value(split->outputs[0]) : nullptr;
    if (!Is(split, "Reshape") || shape == nullptr || shape->shape.size() != 4 ||
        shape->shape[3] != out.head_dim) {
      return Mismatch(t, "expected a projection reshaped to [batch, tokens, heads, head_dim]");
    }
    Take(t), Take(r);
    *count = static_cast<int32_t>(shape->shape[2]);
    *linear = KITE_TRY(Linear(split->inputs[0]));
    return Ok();
  };
  int32_t q_heads = 0, v_heads = 0;
  const std::string q_pre = KITE_TRY(Rope(q_operand, *dot, qk, out.head_dim, &out.rope));
  KITE_RETURN_IF_ERROR(heads(q_pre, &out.q, &q_heads));
  const std::string k_roped = KITE_TRY(cached(k_transpose->inputs[0], &out.past_key, &out.present_key));
  RopeAttrs k_rope;
  const std::string k_pre = KITE_TRY(Rope(k_roped, *k_transpose, kt, out.head_dim, &k_rope));
  KITE_RETURN_IF_ERROR(heads(k_pre, &out.k, &out.n_kv_heads));
  const std::string v_pre = KITE_TRY(cached(weighted->inputs[1], &out.past_value, &out.present_value));
  KITE_RETURN_IF_ERROR(heads(v_pre, &out.v, &v_heads));
  if (q_heads != out.n_heads || v_heads != out.n_kv_heads || out.n_kv_heads <= 0 ||
      out.n_heads % out.n_kv_heads != 0 || k_rope.theta != out.rope.theta) {
    return Mismatch(qk, std::to_string(q_heads) + " query heads, " +
                            std::to_string(out.n_kv_heads) + " key heads and " +
                            std::to_string(v_heads) + " value heads do not make grouped-query attention with one RoPE");
  }
  if (out.past_key.empty() != out.past_value.empty()) {
    return Mismatch(pv, "only one of the keys and values has a past");
  }
  if (out.q.input != out.k.input || out.q.input != out.v.input) {
    return Mismatch(qk, "q, k and v are projected from different values");
  }
  out.input = out.q.input;
  return out;
}

}  // namespace kite
