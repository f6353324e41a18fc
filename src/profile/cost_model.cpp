#include "profile/cost_model.h"

#include <algorithm>
#include <charconv>

#include "backends/npusim/support/npu_support.h"
#include "profile/convert_cost.h"
#include "tensor/tensor.h"

namespace kite {

namespace {

// What one op asks of the hardware (docs/cost_model.md §2).
struct Work {
  double padded_macs = 0;  // matrix unit, after padding every dimension to the tile
  double activation_in_bytes = 0;  // the matrix unit's activation input (VTCM residency)
  double weights = 0;              // weight elements (widened to fp16 on the fp16 path)
  double vector_elements = 0;
  double bytes = 0;
  double weight_bytes = 0;
  uint64_t macs = 0;
};

int64_t Pad(int64_t x, int64_t tile) { return (x + tile - 1) / tile * tile; }

int64_t Rows(const Value& v) {  // all dimensions but the last
  int64_t rows = 1;
  for (size_t i = 0; i + 1 < v.shape.size(); ++i) rows *= v.shape[i];
  return rows;
}

int32_t LayerOf(const std::string& node) {  // "blk.12.attn_q" -> 12
  if (!node.starts_with("blk.")) return -1;
  int32_t layer = -1;
  const char* begin = node.data() + 4;
  std::from_chars(begin, node.data() + node.size(), layer);
  return layer;
}

// Elements of an element-wise op's output and how many activation tensors it reads.
int InputActivations(OpKind op) {
  switch (op) {
    case OpKind::kAdd:
    case OpKind::kMul:
    case OpKind::kSwiGlu:
      return 2;
    default:
      return 1;
  }
}

// Decomposed nodes run on the NPU (as the ops a pass makes of them); the runtime's own ops
// (the token embedding) on the CPU.
bool OnNpu(const NpuVerdict& verdict) {
  if (!verdict.runtime.empty()) return false;
  return verdict.support.ok || verdict.decomposition != Decomposition::kNone;
}

struct Pricer {
  const Graph& graph;
  const Chip& chip;
  const Recipe& recipe;
  int64_t static_ctx;

  double ActivationCost() const {
    switch (recipe.activations) {
      case ActivationKind::kInt8:
        return chip.cost.a8_cost;
      case ActivationKind::kInt16:
        return 1.0;
      case ActivationKind::kFp16:
        return chip.cost.fp16_cost;
    }
    return 1.0;
  }

  Work MatMul(const Node& node) const {
    const Value& x = graph.value(node.inputs[0]);  // [rows, K]
    const Value& w = graph.value(node.inputs[1]);  // [N, K]
    const int64_t rows = Rows(x), K = w.shape[1], N = w.shape[0], t = chip.cost.tile;
    Work work;
    work.macs = static_cast<uint64_t>(rows * K * N);
    work.padded_macs = static_cast<double>(Pad(rows, t)) * Pad(K, t) * Pad(N, t);
    work.activation_in_bytes = static_cast<double>(rows * K * recipe.act_bytes);
    work.weights = static_cast<double>(K * N);
    // Weight codes, one 4-byte scale per output channel, activations in and out.
    work.weight_bytes = static_cast<double>(K * N * recipe.weight_bits / 8 + N * 4);
    work.bytes = work.weight_bytes + static_cast<double>(rows * (K + N) * recipe.act_bytes);
    return work;
  }

  // q [T, Hq, D], k and v [T, Hkv, D] (the new positions); the cache holds static_ctx positions.
  Work Attention(const Node& node) const {
    const Value& q = graph.value(node.inputs[0]);
    const Value& k = graph.value(node.inputs[1]);
    const int64_t T = q.shape[0], Hq = q.shape[1], D = q.shape[2], Hkv = k.shape[1];
    const int64_t C = static_ctx, G = Hq / Hkv, t = chip.cost.tile;
    Work work;
    work.macs = static_cast<uint64_t>(2 * T * Hq * C * D);  // q·kᵀ and p·v
    // The G query heads sharing a kv head are rows of one product.
    work.padded_macs = 2.0 * Hkv * Pad(T * G, t) * Pad(C, t) * Pad(D, t);
    work.activation_in_bytes = static_cast<double>(T * Hq * D * recipe.act_bytes);  // q
    work.vector_elements = static_cast<double>(T * Hq * C);  // softmax
    work.bytes = static_cast<double>(2 * C * Hkv * D * recipe.kv_bytes +
                                     2 * T * Hq * D * recipe.act_bytes +
                                     2 * T * Hkv * D * recipe.act_bytes);
    return work;
  }

  Work Vector(const Node& node) const {
    const Value& out = graph.value(node.output);
    Work work;
    work.vector_elements = static_cast<double>(out.elements());
    for (ValueId id : node.inputs) {
      const Value& v = graph.value(id);
      if (v.kind == ValueKind::kWeight) work.weight_bytes += static_cast<double>(v.elements() * 2);
    }
    work.bytes = (InputActivations(node.op()) + 1) * work.vector_elements * recipe.act_bytes +
                 work.weight_bytes;
    return work;
  }

  // The embedding lookup runs on the CPU (the runtime gathers rows and feeds the NPU graph):
  // the rows read at the weight width and written at the activation width.
  Work Embedding(const Node& node) const {
    const Value& out = graph.value(node.output);
    Work work;
    work.bytes = static_cast<double>(out.elements()) * (recipe.act_bytes + recipe.weight_bits / 8.0);
    return work;
  }

  // Matrix- and vector-unit time of `work` on the NPU (docs/cost_model.md §2).
  double NpuCompute(const Work& work) const {
    // Activations that do not fit in VTCM are streamed in pieces while the matrix unit waits.
    const double spill =
        work.activation_in_bytes >= chip.vtcm_mb * 1024 * 1024 ? chip.cost.vtcm_spill_cost : 1.0;
    double s = work.padded_macs * ActivationCost() * spill / chip.cost.hmx_macs_per_s +
               work.vector_elements / (chip.cost.vec_elems_per_s_per_context * chip.hvx_contexts);
    if (recipe.activations == ActivationKind::kFp16) {
      s += work.weights / chip.cost.dequant_weights_per_s;
    }
    return s;
  }

  // `verdict`: the support rules' (backends/npusim/support/npu_support.h). A node a pass
  // decomposes runs on the NPU and is priced as the op it replaces: the decompositions are
  // vector work over the same elements (docs/cost_model.md).
  OpCost Price(const Node& node, const NpuVerdict& verdict) const {
    OpCost cost;
    cost.node = node.name;
    cost.op = std::string(node.op_name());
    cost.layer = LayerOf(node.name);
    cost.shape = ShapeString(graph.value(node.output).shape);
    Work work;
    switch (node.op()) {
      case OpKind::kMatMul: work = MatMul(node); break;
      case OpKind::kAttention: work = Attention(node); break;
      case OpKind::kEmbedding: work = Embedding(node); break;
      default: work = Vector(node); break;
    }
    cost.bytes = work.bytes;
    cost.weight_bytes = work.weight_bytes;
    cost.macs = work.macs;
    cost.placement = verdict.runtime.empty() ? verdict.support.reason : verdict.runtime;
    const double dram = chip.dram_peak_gbs * 1e9;
    if (OnNpu(verdict)) {
      cost.unit = ComputeUnit::kNpu;
      cost.compute_s = NpuCompute(work);
      cost.memory_s = work.bytes / (chip.cost.dram_efficiency * dram);
      cost.overhead_s = chip.cost.op_overhead_us * 1e-6;
      // The DMA engine streams the op's bytes while the NPU's control cores set the op up, so
      // the overhead delays the matrix and vector units, not the transfer.
      const double issue = cost.compute_s + cost.overhead_s;
      cost.time_s = std::max(issue, cost.memory_s);
      cost.bound = cost.memory_s > issue                 ? CostBound::kBandwidth
                   : cost.overhead_s > cost.compute_s ? CostBound::kOverhead
                                                      : CostBound::kCompute;
    } else {
      cost.unit = ComputeUnit::kCpu;
      cost.compute_s = static_cast<double>(work.macs) / chip.cost.cpu_macs_per_s;
      cost.memory_s = work.bytes / (chip.cost.cpu_bw_fraction * dram);
      cost.overhead_s = chip.cost.cpu_op_overhead_us * 1e-6;
      const double busy = std::max(cost.compute_s, cost.memory_s);
      cost.time_s = busy + cost.overhead_s;
      cost.bound = cost.overhead_s > busy              ? CostBound::kOverhead
                   : cost.compute_s >= cost.memory_s ? CostBound::kCompute
                                                     : CostBound::kBandwidth;
    }
    return cost;
  }
};

}  // namespace

std::string_view UnitName(ComputeUnit unit) { return unit == ComputeUnit::kNpu ? "NPU" : "CPU"; }

std::string_view BoundName(CostBound bound) {
  switch (bound) {
    case CostBound::kCompute: return "compute";
    case CostBound::kBandwidth: return "bandwidth";
    case CostBound::kOverhead: return "overhead";
  }
  return "compute";
}

Result<GraphCost> CostGraph(const Graph& graph, const Chip& chip, const Recipe& recipe,
                            int32_t static_ctx) {
  if (recipe.activations == ActivationKind::kFp16 && !chip.fp16) {
    return Unsupported("recipe " + recipe.name + " needs fp16 activations on the NPU; " +
                       chip.name + " (" + chip.hexagon + ") has no FP16");
  }
  const std::optional<ValueId> tokens = graph.FindInput("tokens");
  if (!tokens) return InvalidInput("cost model: the graph has no \"tokens\" input");
  GraphCost out;
  out.tokens = static_cast<int32_t>(graph.value(*tokens).shape[0]);
  out.static_ctx = static_ctx;
  if (static_ctx < out.tokens) {
    return InvalidInput("static context " + std::to_string(static_ctx) + " is shorter than the " +
                        std::to_string(out.tokens) + "-token chunk");
  }
  const Pricer pricer{graph, chip, recipe, static_ctx};
  const NpuTarget target{.chip = chip,
                         .activations = recipe.activations,
                         .context = static_ctx,
                         .kv_bytes = recipe.kv_bytes};
  const std::span<const Node> nodes = graph.nodes();
  std::vector<NpuVerdict> verdicts(nodes.size());
  std::vector<ComputeUnit> units(nodes.size(), ComputeUnit::kNpu);
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].is_view()) continue;
    verdicts[i] = NpuRule(graph, nodes[i], target);
    units[i] = OnNpu(verdicts[i]) ? ComputeUnit::kNpu : ComputeUnit::kCpu;
  }
  std::vector<std::vector<OpCost>> converts = ConvertCosts(graph, units, chip, recipe);
  out.graph_overhead_s = chip.cost.graph_overhead_us * 1e-6;
  out.total_s = out.graph_overhead_s;
  auto add = [&](OpCost cost) {
    out.total_s += cost.time_s;
    ++(cost.unit == ComputeUnit::kNpu ? out.npu_ops : out.cpu_ops);
    if (cost.op == kConvertOp) ++out.converts;
    out.ops.push_back(std::move(cost));
  };
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].is_view()) continue;
    add(pricer.Price(nodes[i], verdicts[i]));
    for (OpCost& convert : converts[i]) {  // right after the op that produced the value
      convert.layer = LayerOf(nodes[i].name);
      add(std::move(convert));
    }
  }
  return out;
}

}  // namespace kite
