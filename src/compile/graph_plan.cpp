#include "compile/graph_plan.h"

#include <algorithm>
#include <map>

#include "backends/registry.h"
#include "compile/session_split.h"
#include "graph/passes/insert_qdq.h"
#include "runtime/partitioner.h"

namespace kite {

namespace {

using Json = nlohmann::ordered_json;

Json PartitionsJson(const Graph& graph, const Placement& placement) {
  Json partitions = Json::array();
  const std::span<const Node> nodes = graph.nodes();
  for (const Partition& partition : placement.partitions) {
    const std::string& backend = placement.backend_names[partition.backend];
    std::map<std::string, int64_t> ops;
    Json names = Json::array();
    Json declined = Json::array();  // why the more preferred backends refused its nodes
    for (int32_t i = partition.begin; i < partition.end; ++i) {
      if (nodes[i].is_view()) continue;  // views run nowhere
      ++ops[std::string(nodes[i].op_name())];
      names.push_back(nodes[i].name);
      for (const Declined& refusal : placement.nodes[i].declined) {
        declined.push_back(
            {{"node", nodes[i].name}, {"backend", refusal.backend}, {"reason", refusal.reason}});
      }
    }
    Json entry = {
        {"backend", backend}, {"unit", UnitOfBackend(backend)}, {"ops", ops}, {"nodes", names}};
    if (!declined.empty()) entry["declined"] = std::move(declined);
    partitions.push_back(std::move(entry));
  }
  return partitions;
}

Result<Json> PlanGraph(const Model& model, const GraphPlanOptions& options,
                       std::span<Backend* const> backends, int32_t tokens, int32_t context) {
  Graph graph = KITE_TRY(model.BuildGraph({.tokens = tokens, .context = context}));
  const auto& encodings = model.config().activation_encodings;
  if (!encodings.empty()) graph = KITE_TRY(InsertQdq(encodings).Run(graph)).graph;
  const Placement placement = KITE_TRY(PartitionGraph(graph, backends));
  const KvLayout kv = model.kv_layout();
  const std::vector<SessionPiece> pieces =
      KITE_TRY(SplitForSession(graph, {.kv_heads = kv.n_kv_heads,
                                       .head_dim = kv.head_dim,
                                       .context = context,
                                       .kv_bytes = options.kv_bytes,
                                       .activation_bytes = options.activation_bytes,
                                       .limit = options.session_limit}));
  Json splits = Json::array();
  for (const SessionPiece& piece : pieces) {
    splits.push_back({{"layers", {piece.first_layer, piece.last_layer}},
                      {"bytes", piece.bytes()},
                      {"weight_bytes", piece.weight_bytes},
                      {"kv_bytes", piece.kv_bytes},
                      {"activation_bytes", piece.activation_bytes}});
  }
  return Json{{"phase", tokens == 1 ? "decode" : "prefill"},
              {"tokens", tokens},
              {"context", context},
              {"partitions", PartitionsJson(graph, placement)},
              {"splits", splits}};
}

}  // namespace

std::string UnitOfBackend(const std::string& backend) {
  return backend == "npusim" ? "NPU" : "CPU";
}

Result<Json> PlanGraphs(const Model& model, const GraphPlanOptions& options) {
  Json graphs = Json::array();
  for (int32_t context : options.contexts) {
    // One thread: placing asks the backends what they support, it runs nothing. Made per
    // context: whether attention's KV fits in VTCM depends on it.
    const auto made = KITE_TRY(MakeBackends(
        options.backend, {.threads = 1,
                          .chip = options.chip,
                          .context = context,
                          .kv_dtype = options.kv_bytes > 1 ? DType::kF16 : DType::kI8}));
    std::vector<Backend*> backends;
    for (const auto& backend : made) backends.push_back(backend.get());
    const int32_t chunk = std::min(options.prefill_chunk, context);
    // A chunk of one token is the decode step: no prefill graph of its own.
    const std::vector<int32_t> phases =
        chunk > 1 ? std::vector<int32_t>{chunk, 1} : std::vector<int32_t>{1};
    for (int32_t tokens : phases) {
      auto graph = PlanGraph(model, options, backends, tokens, context);
      if (!graph) {
        return std::unexpected(std::move(graph.error())
                                   .WithContext(std::string(tokens == 1 ? "decode" : "prefill") +
                                                " graph of " + std::to_string(tokens) +
                                                " tokens for a context of " +
                                                std::to_string(context)));
      }
      graphs.push_back(std::move(*graph));
    }
  }
  return graphs;
}

}  // namespace kite
