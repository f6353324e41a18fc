#include "graph/passes/fold_channel_scale.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include "graph/rewriter.h"
#include "tensor/dequantize.h"

namespace kite {

namespace {

// A whole weight value of a dtype tensor/dequantize.h reads; else an error naming it.
Status CheckRescalable(const Value& weight) {
  const std::string what = "weight '" + weight.name + "'";
  if (weight.kind != ValueKind::kWeight) {
    return Unsupported(what + " is not a weight value (a view or a computed value); only a " +
                       "whole weight can be rescaled");
  }
  if (!Traits(weight.dtype).can_dequantize) {
    return Unsupported(what + " is " + std::string(DTypeName(weight.dtype)) +
                       ", which cannot be read as floats to rescale");
  }
  return Ok();
}

// `weight` read as floats, element i multiplied (or divided) by scale[index(i)], as a new f32
// weight `name` in `store`. `length` is the size scale must have, `dim` what it is called.
template <typename Index>
Result<TensorView> Rescale(WeightStore& store, std::string name, const Value& weight,
                           std::span<const float> scale, bool divide, int64_t length,
                           const char* dim, Index index) {
  KITE_RETURN_IF_ERROR(CheckRescalable(weight));
  const std::string what = "weight '" + weight.name + "'";
  if (static_cast<int64_t>(scale.size()) != length) {
    return InvalidInput(what + " " + ShapeString(weight.shape) + ": " +
                        std::to_string(scale.size()) + " scales, expected " +
                        std::to_string(length) + " (" + dim + ")");
  }
  const int64_t elements = weight.elements();
  AlignedBuffer buffer = KITE_TRY(AlignedBuffer::Allocate(elements * sizeof(float)));
  float* out = reinterpret_cast<float*>(buffer.data());
  Status read = Dequantize(weight.dtype, weight.data, out, elements);
  if (!read) return std::unexpected(std::move(read.error()).WithContext(what));
  for (int64_t i = 0; i < elements; ++i) {
    const float s = scale[index(i)];
    out[i] = divide ? out[i] / s : out[i] * s;
  }
  return store.AddBuffer(std::move(name), DType::kF32, weight.shape, std::move(buffer));
}

}  // namespace

Result<TensorView> ScaleColumns(WeightStore& store, std::string name, const Value& weight,
                                std::span<const float> scale, bool divide) {
  const int64_t columns = weight.shape.back();
  return Rescale(store, std::move(name), weight, scale, divide, columns, "its last dim",
                 [columns](int64_t i) { return i % columns; });
}

Result<TensorView> ScaleRows(WeightStore& store, std::string name, const Value& weight,
                             std::span<const float> scale) {
  const int64_t columns = weight.shape.back();
  const int64_t rows = columns > 0 ? weight.elements() / columns : 0;
  return Rescale(store, std::move(name), weight, scale, false, rows, "its rows",
                 [columns](int64_t i) { return i / columns; });
}

namespace {

Status CheckScale(const ChannelScale& scale, int64_t dim, const char* what) {
  if (static_cast<int64_t>(scale.scale.size()) != dim) {
    return InvalidInput(std::to_string(scale.scale.size()) + " scales for " + what + " over " +
                        std::to_string(dim) + " channels");
  }
  for (size_t k = 0; k < scale.scale.size(); ++k) {
    if (scale.scale[k] == 0.0f || !std::isfinite(scale.scale[k])) {
      return InvalidInput("scale " + std::to_string(k) + " is " + std::to_string(scale.scale[k]) +
                          ", expected finite and non-zero");
    }
  }
  return Ok();
}

// One fold: the node whose output is scaled and the matmuls that divide their columns.
struct FoldPlan {
  int32_t producer = -1;  // rms_norm or matmul node index
  // Matmul node index -> what its columns are divided by ([K]).
  std::vector<std::pair<int32_t, std::vector<float>>> consumers;
};

bool IsGraphOutput(const Graph& graph, ValueId value) {
  const auto& outputs = graph.outputs();
  return std::find(outputs.begin(), outputs.end(), value) != outputs.end();
}

// The one node reading `value` as input `slot` (and through no other input), else an error
// naming what reads it instead.
Result<int32_t> SoleReader(const Graph& graph, const std::vector<std::vector<int32_t>>& readers,
                           ValueId value, OpKind op, size_t slot, const char* role) {
  const Value& v = graph.value(value);
  if (IsGraphOutput(graph, value)) {
    return InvalidInput("'" + v.name + "' is a graph output, which the fold would change");
  }
  const std::vector<int32_t>& r = readers[value.index];
  if (r.size() != 1) {
    return InvalidInput("'" + v.name + "' has " + std::to_string(r.size()) +
                        " readers, expected one (" + role + ")");
  }
  const Node& node = graph.nodes()[r[0]];
  bool ok = node.op() == op && slot < node.inputs.size() && node.inputs[slot] == value;
  for (size_t i = 0; i < node.inputs.size() && ok; ++i) ok = i == slot || node.inputs[i] != value;
  if (!ok) {
    return InvalidInput("node '" + node.name + "' (" + std::string(node.op_name()) + ") reads '" +
                        v.name + "', expected " + role + "; the fold would change it");
  }
  return r[0];
}

// The fold of a scale on matmul `p`'s output channels: v -> attention -> o-proj or
// up -> swiglu -> down-proj (see the header).
Result<FoldPlan> PlanMatMulFold(const Graph& graph, const std::vector<std::vector<int32_t>>& readers,
                                int32_t p, const ChannelScale& scale) {
  const Node& producer = graph.nodes()[p];
  KITE_RETURN_IF_ERROR(CheckRescalable(graph.value(producer.inputs[1])));
  if (producer.inputs.size() > 2) KITE_RETURN_IF_ERROR(CheckRescalable(graph.value(producer.inputs[2])));
  const int64_t n = graph.value(producer.output).shape.back();
  KITE_RETURN_IF_ERROR(CheckScale(scale, n, "a matmul"));
  FoldPlan plan{.producer = p, .consumers = {}};
  const std::vector<int32_t>& first = readers[producer.output.index];
  const bool swiglu = first.size() == 1 && graph.nodes()[first[0]].op() == OpKind::kSwiGlu;
  int32_t consumer = -1;
  std::vector<float> columns;
  if (swiglu) {
    const int32_t s = KITE_TRY(SoleReader(graph, readers, producer.output, OpKind::kSwiGlu, 1,
                                          "a swiglu's up input"));
    consumer = KITE_TRY(SoleReader(graph, readers, graph.nodes()[s].output, OpKind::kMatMul, 0,
                                   "a matmul's x"));
    columns = scale.scale;
  } else {
    const int32_t heads = KITE_TRY(SoleReader(graph, readers, producer.output, OpKind::kReshape, 0,
                                              "a reshape into heads, or a swiglu's up input"));
    const int32_t attn = KITE_TRY(SoleReader(graph, readers, graph.nodes()[heads].output,
                                             OpKind::kAttention, 2, "an attention's v"));
    const int32_t flat = KITE_TRY(SoleReader(graph, readers, graph.nodes()[attn].output,
                                             OpKind::kReshape, 0, "a reshape of the heads"));
    consumer = KITE_TRY(SoleReader(graph, readers, graph.nodes()[flat].output, OpKind::kMatMul, 0,
                                   "a matmul's x"));
    const std::vector<int64_t>& q = graph.value(graph.nodes()[attn].inputs[0]).shape;  // [T, Hq, D]
    const std::vector<int64_t>& v = graph.value(graph.nodes()[heads].output).shape;    // [T, Hkv, D]
    const int64_t hq = q[1], hkv = v[1], d = v[2];
    for (int64_t h = 0; h < hq; ++h) {
      for (int64_t k = 0; k < d; ++k) columns.push_back(scale.scale[(h / (hq / hkv)) * d + k]);
    }
  }
  KITE_RETURN_IF_ERROR(CheckRescalable(graph.value(graph.nodes()[consumer].inputs[1])));
  plan.consumers.emplace_back(consumer, std::move(columns));
  return plan;
}

// The fold of a scale on rms_norm `n`: every reader is a matmul reading it as x.
Result<FoldPlan> PlanNormFold(const Graph& graph, const std::vector<std::vector<int32_t>>& readers,
                              int32_t n, const ChannelScale& scale) {
  const Node& norm = graph.nodes()[n];
  if (IsGraphOutput(graph, norm.output)) {
    return InvalidInput("its output is a graph output, which the fold would change");
  }
  if (readers[norm.output.index].empty()) return InvalidInput("nothing reads it");
  KITE_RETURN_IF_ERROR(CheckRescalable(graph.value(norm.inputs[1])));
  FoldPlan plan{.producer = n, .consumers = {}};
  for (int32_t r : readers[norm.output.index]) {
    const Node& reader = graph.nodes()[r];
    if (reader.op() != OpKind::kMatMul || reader.inputs[0] != norm.output ||
        reader.inputs[1] == norm.output) {
      return InvalidInput("node '" + reader.name + "' (" + std::string(reader.op_name()) +
                          ") reads it other than as a matmul's x; the fold would change it");
    }
    KITE_RETURN_IF_ERROR(CheckRescalable(graph.value(reader.inputs[1])));
    plan.consumers.emplace_back(r, scale.scale);
  }
  KITE_RETURN_IF_ERROR(CheckScale(scale, graph.value(norm.output).shape.back(), "a norm"));
  return plan;
}

Result<FoldPlan> PlanFold(const Graph& graph, const std::vector<std::vector<int32_t>>& readers,
                          const ChannelScale& scale) {
  for (size_t n = 0; n < graph.nodes().size(); ++n) {
    const Node& node = graph.nodes()[n];
    if (node.name != scale.norm) continue;
    if (node.op() == OpKind::kRmsNorm) return PlanNormFold(graph, readers, n, scale);
    if (node.op() == OpKind::kMatMul) return PlanMatMulFold(graph, readers, n, scale);
  }
  return NotFound("the graph has no rms_norm node of that name, nor a matmul");
}

// A weight made by this pass, as a graph value to rescale again.
Value AsWeight(const TensorView& t) {
  Value v;
  v.kind = ValueKind::kWeight;
  v.name = t.name;
  v.dtype = t.dtype;
  v.shape = t.shape;
  v.data = t.data;
  v.bytes = t.bytes;
  v.weight_id = t.id;
  return v;
}

}  // namespace

Result<PassOutcome> FoldChannelScale::Run(const Graph& graph) {
  // Who reads each value: node indices.
  std::vector<std::vector<int32_t>> readers(graph.num_values());
  for (size_t n = 0; n < graph.nodes().size(); ++n) {
    for (ValueId input : graph.nodes()[n].inputs) {
      readers[input.index].push_back(static_cast<int32_t>(n));
    }
  }
  // Every fold is checked before the first weight goes into the store: a refused pass leaves
  // the store as it was (short of running out of memory).
  std::vector<FoldPlan> plans;
  for (const ChannelScale& scale : scales_) {
    auto plan = PlanFold(graph, readers, scale);
    if (!plan)
      return std::unexpected(std::move(plan.error()).WithContext("norm '" + scale.norm + "'"));
    for (const FoldPlan& other : plans) {
      if (other.producer == plan->producer) {
        return InvalidInput("norm '" + scale.norm + "': given two scales");
      }
    }
    plans.push_back(*std::move(plan));
  }

  GraphRewriter rw = KITE_TRY(GraphRewriter::Create(graph));
  // (node index, input slot) -> its new weight; a weight rescaled twice starts from the first.
  std::map<std::pair<int32_t, size_t>, TensorView> made;
  auto rescale = [&](int32_t node, size_t slot, auto&& fn) -> Status {
    const Node& n = graph.nodes()[node];
    const auto it = made.find({node, slot});
    const Value current = it != made.end() ? AsWeight(it->second) : graph.value(n.inputs[slot]);
    const std::string suffix = slot == 1 ? ".weight" : ".bias";
    made[{node, slot}] = KITE_TRY(fn(n.name + suffix, current));
    return Ok();
  };
  std::string summary;
  int32_t changes = 0;
  for (size_t i = 0; i < plans.size(); ++i) {
    const std::vector<float>& s = scales_[i].scale;
    const FoldPlan& plan = plans[i];
    const Node& producer = graph.nodes()[plan.producer];
    if (producer.op() == OpKind::kRmsNorm) {
      KITE_RETURN_IF_ERROR(rescale(plan.producer, 1, [&](std::string name, const Value& w) {
        return ScaleColumns(*store_, std::move(name), w, s, false);
      }));
    } else {
      KITE_RETURN_IF_ERROR(rescale(plan.producer, 1, [&](std::string name, const Value& w) {
        return ScaleRows(*store_, std::move(name), w, s);
      }));
      if (producer.inputs.size() > 2) {
        KITE_RETURN_IF_ERROR(rescale(plan.producer, 2, [&](std::string name, const Value& w) {
          return ScaleColumns(*store_, std::move(name), w, s, false);
        }));
      }
    }
    for (const auto& [consumer, columns] : plan.consumers) {
      KITE_RETURN_IF_ERROR(rescale(consumer, 1, [&](std::string name, const Value& w) {
        return ScaleColumns(*store_, std::move(name), w, columns, true);
      }));
    }
    changes += 1 + static_cast<int32_t>(plan.consumers.size());
    summary += (summary.empty() ? "" : ", ") + producer.name + " -> " +
               std::to_string(plan.consumers.size()) + " matmuls";
  }
  std::map<int32_t, std::map<size_t, ValueId>> new_inputs;
  for (const auto& [at, view] : made) {
    new_inputs[at.first][at.second] = KITE_TRY(rw.builder().Weight(view));
  }

  const Node* first = graph.nodes().data();  // Run visits graph.nodes() itself, in order
  Graph rewritten = KITE_TRY(
      std::move(rw).Run([&](GraphRewriter& rw, const Node& node) -> Result<std::optional<ValueId>> {
        const auto it = new_inputs.find(static_cast<int32_t>(&node - first));
        if (it == new_inputs.end()) return std::nullopt;
        // Norm (x, weight) and matmul (x, w[, bias]) take their weight as input 1.
        std::vector<ValueId> inputs;
        for (ValueId input : node.inputs) inputs.push_back(KITE_TRY(rw.Map(input)));
        for (const auto& [slot, value] : it->second) inputs[slot] = value;
        return rw.builder().AddNode(node.name, node.attrs, std::move(inputs),
                                    graph.value(node.output).encoding);
      }));
  return PassOutcome{
      .graph = std::move(rewritten), .changes = changes, .summary = std::move(summary)};
}

}  // namespace kite
