#include "models/onnx_import.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "models/onnx_fold.h"

namespace kite {

namespace {

// The probe: enough tokens for a mask with a masked entry, one past position so the cache's
// concatenation and the mask's past columns are exercised, and position 1 inside the probe
// (its RoPE angles are the frequencies themselves).
constexpr int64_t kProbeTokens = 3;
constexpr int64_t kProbePast = 1;

bool IsPast(std::string_view name) { return name.starts_with("past_key_values."); }

// Binds each graph input's symbolic sizes (and the data of attention_mask and position_ids).
Result<std::map<std::string, OnnxValue>> BindInputs(const OnnxModel& model, OnnxProbe probe,
                                                    OnnxImport* import) {
  std::map<std::string, OnnxValue> bound;
  std::map<std::string, int64_t> params;
  auto dims = [&](const OnnxValueInfo& info, std::vector<int64_t> want) -> Result<std::vector<int64_t>> {
    if (!info.has_shape || info.dims.size() != want.size()) {
      return Unsupported(model.path() + ": input '" + info.name + "' has rank " +
                         std::to_string(info.dims.size()) + ", expected " +
                         std::to_string(want.size()));
    }
    for (size_t i = 0; i < want.size(); ++i) {
      const OnnxDim& d = info.dims[i];
      if (want[i] < 0) {  // a size the file fixes (heads, head_dim)
        if (d.value < 0) {
          return Unsupported(model.path() + ": input '" + info.name + "' dimension " +
                             std::to_string(i) + " is symbolic ('" + d.param + "'), expected a fixed size");
        }
        want[i] = d.value;
      } else if (d.value >= 0 && d.value != want[i]) {
        return Unsupported(model.path() + ": input '" + info.name + "' dimension " +
                           std::to_string(i) + " is fixed at " + std::to_string(d.value) +
                           "; Kite needs it to vary (export with dynamic_axes for batch and "
                           "sequence)");
      } else if (!d.param.empty()) {
        const auto [it, added] = params.emplace(d.param, want[i]);
        if (!added && it->second != want[i]) {
          return Unsupported(model.path() + ": dimension '" + d.param + "' names two sizes (" +
                             std::to_string(it->second) + " and " + std::to_string(want[i]) + ")");
        }
      }
    }
    return want;
  };
  const bool has_past = std::any_of(model.inputs().begin(), model.inputs().end(),
                                    [](const OnnxValueInfo& i) { return IsPast(i.name); });
  const int64_t past = has_past ? probe.past : 0;
  for (const OnnxValueInfo& info : model.inputs()) {
    if (model.FindInitializer(info.name) != nullptr) continue;  // an initializer's default
    OnnxValue v;
    v.type = info.type;
    v.shape_known = true;
    if (info.name == "input_ids") {
      v.shape = KITE_TRY(dims(info, {1, probe.tokens}));
    } else if (info.name == "attention_mask") {
      v.shape = KITE_TRY(dims(info, {1, past + probe.tokens}));
      v.data = std::vector<double>(past + probe.tokens, 1.0);
    } else if (info.name == "position_ids") {
      v.shape = KITE_TRY(dims(info, {1, probe.tokens}));
      std::vector<double> positions;
      for (int64_t t = 0; t < probe.tokens; ++t) positions.push_back(static_cast<double>(past + t));
      v.data = std::move(positions);
    } else if (IsPast(info.name)) {
      v.shape = KITE_TRY(dims(info, {1, -1, past, -1}));
      import->kv_inputs.push_back(info.name);
    } else {
      return Unsupported(model.path() + ": input '" + info.name +
                         "' is not one Kite binds (input_ids, attention_mask, position_ids, "
                         "past_key_values.N.key/value)");
    }
    bound[info.name] = std::move(v);
  }
  if (!bound.contains("input_ids")) {
    return Unsupported(model.path() + ": the graph has no input 'input_ids'");
  }
  for (const auto& [name, size] : params) import->bindings.push_back(name + " = " + std::to_string(size));
  return bound;
}

struct Block {
  OnnxRmsNorm attn_norm, ffn_norm;
  OnnxAttention attention;
  OnnxSwiGlu mlp;
};

// The residual Add `x = stream + branch(norm(stream))`: tries each operand as the branch.
template <typename Branch, typename Match>
Result<std::string> Residual(OnnxMatcher& m, std::string_view value, int32_t walk,
                             const char* branch_op, const char* norm_op, Match match,
                             Branch* branch, OnnxRmsNorm* norm) {
  size_t n = 0;
  const OnnxNode* add = m.Producer(value, &n);
  // ONNX Runtime's SkipSimplifiedLayerNormalization adds its input and skip as its fourth output.
  const bool fused = add != nullptr && add->op_type == "SkipSimplifiedLayerNormalization" &&
                     add->outputs.size() > 3 && add->outputs[3] == m.Through(value);
  if (add == nullptr || (add->op_type != "Add" && !fused) || add->inputs.size() < 2) {
    return Unsupported("value '" + std::string(value) + "' is not a residual Add");
  }
  Error last{ErrorCode::kUnsupported, ""};
  for (int side = 0; side < 2; ++side) {
    const size_t mark = m.Begin();
    Result<Branch> b = match(add->inputs[side]);
    if (!b) {
      last = b.error();
      m.Abandon(mark);
      continue;
    }
    const std::string stream = m.Through(add->inputs[1 - side]);
    m.Take(n);
    m.Commit(mark, branch_op, walk);
    const size_t norm_mark = m.Begin();
    Result<OnnxRmsNorm> r = m.RmsNorm(b->input);
    if (!r) return std::unexpected(r.error());
    if (r->input != stream) {
      return m.Mismatch(n, "the normed value is not the residual stream this Add continues");
    }
    m.Commit(norm_mark, norm_op, walk);
    *branch = std::move(*b);
    *norm = std::move(*r);
    return stream;
  }
  return std::unexpected(std::move(last));
}

Status Recognize(const OnnxModel& model, OnnxMatcher& m, OnnxImport* out) {
  std::string logits;
  for (const OnnxValueInfo& o : model.outputs()) {
    if (o.name == "logits") logits = o.name;
  }
  if (logits.empty() && !model.outputs().empty()) logits = model.outputs()[0].name;
  size_t mark = m.Begin();
  const OnnxLinear head = KITE_TRY(m.Linear(logits));
  m.Commit(mark, "matmul (output)", -1);
  mark = m.Begin();
  const OnnxRmsNorm final_norm = KITE_TRY(m.RmsNorm(head.input));
  m.Commit(mark, "rms_norm (output_norm)", -1);

  std::vector<Block> blocks;  // last first
  std::string x = final_norm.input;
  for (int32_t walk = 0;; ++walk) {
    if (walk > static_cast<int32_t>(model.nodes().size())) {
      return Unsupported("the residual stream loops back on itself");
    }
    size_t n = 0;
    const OnnxNode* node = m.Producer(x, &n);
    if (node != nullptr && node->op_type == "Gather") break;
    Block block;
    x = KITE_TRY(Residual<OnnxSwiGlu>(
        m, x, walk, "swiglu (ffn_gate, ffn_up, silu, ffn_down, residual add)", "rms_norm (ffn_norm)",
        [&](std::string_view v) { return m.SwiGlu(v); }, &block.mlp, &block.ffn_norm));
    x = KITE_TRY(Residual<OnnxAttention>(
        m, x, walk, "attention (q, k, v, rope, kv cache, causal softmax, output, residual add)",
        "rms_norm (attn_norm)", [&](std::string_view v) { return m.Attention(v); },
        &block.attention, &block.attn_norm));
    blocks.push_back(std::move(block));
  }
  std::reverse(blocks.begin(), blocks.end());
  // The embedding: Gather(table, input_ids).
  mark = m.Begin();
  size_t g = 0;
  const OnnxNode* gather = m.Producer(x, &g);
  const OnnxTensor* table = gather->inputs.size() == 2 ? model.FindInitializer(gather->inputs[0]) : nullptr;
  const int64_t axis = gather->Attribute("axis") ? gather->Attribute("axis")->i : 0;
  if (table == nullptr || table->shape.size() != 2 || axis != 0 ||
      m.Through(gather->inputs[1]) != "input_ids") {
    return m.Mismatch(g, "expected the token embedding: Gather(stored [vocab, hidden], input_ids)");
  }
  m.Take(g);
  m.Commit(mark, "embedding (token_embd)", -1);
  if (blocks.empty()) return Unsupported("no transformer block between the embedding and the logits");

  ModelConfig& c = out->config;
  const OnnxAttention& a0 = blocks[0].attention;
  c.architecture = "ONNX decoder (" + model.producer() + ")";
  c.n_layers = static_cast<int32_t>(blocks.size());
  c.vocab = static_cast<int32_t>(table->shape[0]);
  c.hidden = static_cast<int32_t>(table->shape[1]);
  c.n_heads = a0.n_heads;
  c.n_kv_heads = a0.n_kv_heads;
  c.head_dim = a0.head_dim;
  c.ffn = static_cast<int32_t>(blocks[0].mlp.gate.out);
  c.rms_eps = static_cast<float>(final_norm.eps);
  c.rope = a0.rope;
  c.q_bias = a0.q.bias.has_value();
  c.k_bias = a0.k.bias.has_value();
  c.v_bias = a0.v.bias.has_value();
  c.o_bias = a0.o.bias.has_value();
  c.mlp_bias = blocks[0].mlp.gate.bias.has_value();
  c.tied_embeddings = head.weight.initializer == table->name && !head.weight.transpose;
  auto& w = out->weights;
  w.emplace_back("token_embd.weight", OnnxWeight{table->name, false});
  std::set<std::string> presents;
  for (size_t l = 0; l < blocks.size(); ++l) {
    const Block& b = blocks[l];
    const OnnxAttention& a = b.attention;
    const std::string blk = "blk." + std::to_string(l) + ".";
    if (a.n_heads != c.n_heads || a.n_kv_heads != c.n_kv_heads || a.head_dim != c.head_dim ||
        a.rope.theta != c.rope.theta || b.mlp.gate.out != c.ffn ||
        a.q.bias.has_value() != c.q_bias || a.k.bias.has_value() != c.k_bias ||
        a.v.bias.has_value() != c.v_bias || a.o.bias.has_value() != c.o_bias ||
        b.mlp.gate.bias.has_value() != c.mlp_bias || b.mlp.up.bias.has_value() != c.mlp_bias ||
        b.mlp.down.bias.has_value() != c.mlp_bias ||
        std::fabs(b.attn_norm.eps - final_norm.eps) > 1e-6 * final_norm.eps ||
        std::fabs(b.ffn_norm.eps - final_norm.eps) > 1e-6 * final_norm.eps) {
      return Unsupported("block " + std::to_string(l) +
                         " differs from block 0 in its sizes, biases, eps or RoPE base; Kite's "
                         "Llama has one shape for every block");
    }
    if (a.past_key.empty() != out->kv_inputs.empty()) {
      return Unsupported("block " + std::to_string(l) + (a.past_key.empty() ? " has no" : " has a") +
                         " KV cache input, unlike the graph's inputs");
    }
    presents.insert(a.present_key);
    presents.insert(a.present_value);
    w.emplace_back(blk + "attn_norm.weight", b.attn_norm.weight);
    auto linear = [&](const std::string& name, const OnnxLinear& lin) {
      w.emplace_back(blk + name + ".weight", lin.weight);
      if (lin.bias) w.emplace_back(blk + name + ".bias", *lin.bias);
    };
    linear("attn_q", a.q);
    linear("attn_k", a.k);
    linear("attn_v", a.v);
    linear("attn_output", a.o);
    w.emplace_back(blk + "ffn_norm.weight", b.ffn_norm.weight);
    linear("ffn_gate", b.mlp.gate);
    linear("ffn_up", b.mlp.up);
    linear("ffn_down", b.mlp.down);
  }
  w.emplace_back("output_norm.weight", final_norm.weight);
  if (!c.tied_embeddings) w.emplace_back("output.weight", head.weight);
  if (head.bias) return Unsupported("the output projection has a bias, which Kite's Llama lacks");
  for (const OnnxValueInfo& o : model.outputs()) {
    if (o.name != logits && !presents.contains(o.name)) {
      return Unsupported("graph output '" + o.name + "' is neither the logits nor a present key/value");
    }
  }
  return Ok();
}

}  // namespace

Result<OnnxImport> RecognizeOnnx(const OnnxModel& model) {
  OnnxImport out;
  const auto standard = model.opsets().find("");
  if (standard == model.opsets().end() || standard->second < 13) {
    return Unsupported(model.path() + ": opset " +
                       std::to_string(standard == model.opsets().end() ? 0 : standard->second) +
                       "; Kite reads ONNX opset 13 and newer");
  }
  const OnnxProbe probe{kProbeTokens, kProbePast};
  std::map<std::string, OnnxValue> inputs = KITE_TRY(BindInputs(model, probe, &out));
  const FoldedGraph graph = FoldOnnxGraph(model, std::move(inputs));
  const bool has_past = !out.kv_inputs.empty();
  OnnxMatcher matcher(model, graph, {probe.tokens, has_past ? probe.past : 0});
  const Status recognized = Recognize(model, matcher, &out);
  if (!recognized) out.error = recognized.error().message;
  for (bool f : graph.folded) out.folded_nodes += f ? 1 : 0;
  // Blocks were walked last first: number them from the embedding.
  out.fusions = matcher.fusions();
  int32_t walked = -1;
  for (const OnnxFusion& f : out.fusions) walked = std::max(walked, f.layer);
  for (OnnxFusion& f : out.fusions) {
    if (f.layer >= 0) f.layer = walked - f.layer;
  }
  std::sort(out.fusions.begin(), out.fusions.end(), [](const OnnxFusion& a, const OnnxFusion& b) {
    return a.nodes.empty() || (!b.nodes.empty() && a.nodes.front() < b.nodes.front());
  });
  for (size_t n : matcher.Unmapped()) {
    const auto why = graph.unknown.find(n);
    out.unmapped.push_back(
        "node " + model.nodes()[n].Describe() + ": " +
        (why != graph.unknown.end() ? why->second : "not part of any pattern Kite recognised"));
  }
  if (!recognized) out.config = ModelConfig{};
  return out;
}

}  // namespace kite
