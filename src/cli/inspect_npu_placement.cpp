#include "cli/inspect_npu_placement.h"

#include "backends/npusim/support/npu_boundaries.h"
#include "backends/npusim/support/prepare_for_npu.h"

namespace kite::cli {

namespace {

bool IsConvert(const Node& node) {
  return node.name.ends_with(".to_npu") || node.name.find(".to_cpu.") != std::string::npos;
}

Result<Json> GraphPlacement(const std::string& phase, int32_t tokens, const Graph& graph,
                            const NpuTarget& target) {
  Json decomposed = Json::array();
  for (const Node& node : graph.nodes()) {
    if (node.is_view()) continue;
    const NpuVerdict verdict = NpuRule(graph, node, target);
    if (verdict.decomposition == Decomposition::kNone) continue;
    decomposed.push_back({{"node", node.name},
                          {"op", std::string(node.op_name())},
                          {"reason", verdict.support.reason}});
  }
  WeightStore tables;  // the decompositions' constants, alive while the prepared graph is read
  const NpuGraph prepared = KITE_TRY(PrepareForNpu(graph, target, &tables));
  const std::span<const Node> all = prepared.graph.nodes();
  std::vector<bool> on_npu(all.size(), true);
  Json nodes = Json::array();
  int64_t npu = 0, cpu = 0, converts = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    const Node& node = all[i];
    if (node.is_view()) continue;
    const NpuVerdict verdict = NpuRule(prepared.graph, node, target);
    on_npu[i] = verdict.support.ok && verdict.runtime.empty();
    Json entry = {{"node", node.name},
                  {"op", std::string(node.op_name())},
                  {"unit", on_npu[i] ? "NPU" : "CPU"}};
    if (!verdict.support.ok) entry["reason"] = verdict.support.reason;
    if (!verdict.runtime.empty()) entry["reason"] = verdict.runtime;
    if (IsConvert(node)) {
      entry["reason"] = "convert at an NPU <-> CPU boundary";
      ++converts;
    }
    ++(on_npu[i] ? npu : cpu);
    nodes.push_back(std::move(entry));
  }
  // Where the units meet. A graph that states its encodings has its converts as nodes now (the
  // boundaries are then between them and the CPU nodes); in a plain f32 graph they are where the
  // converts go once it is quantized.
  Json boundaries = Json::array();
  for (const NpuBoundary& b : NpuBoundaries(prepared.graph, on_npu)) {
    boundaries.push_back({{"value", all[b.producer].name},
                          {"to", b.to_cpu ? "CPU" : "NPU"},
                          {"reader", all[b.reader].name}});
  }
  return Json{{"phase", phase},
              {"tokens", tokens},
              {"npu", npu},
              {"cpu", cpu},
              {"convert_nodes", converts},
              {"boundaries", boundaries},
              {"passes", prepared.passes},
              {"decomposed", decomposed},
              {"nodes", nodes}};
}

}  // namespace

Result<Json> InspectNpuPlacement(const std::string& path, const EngineOptions& options,
                                 const std::string& chip_name) {
  const ChipFile chip = KITE_TRY(ReadChipFile(DefaultChipsDir(), chip_name));
  // The graphs are the engine's (with the model's activation encodings, if any); ref compiles
  // them, since only their nodes are read.
  EngineOptions graphs_only = options;
  graphs_only.backend = "ref";
  auto engine = KITE_TRY(Engine::Load(path, graphs_only));
  const NpuTarget target{.chip = chip.features,
                         .activations = ActivationKind::kInt16,
                         .context = engine->context_length(),
                         .kv_bytes = KITE_TRY(NpuKvBytes(options.kv_dtype))};
  Json graphs = Json::array();
  {  // Each lease is held while its graph is read, one at a time.
    const Engine::GraphLease decode = KITE_TRY(engine->LeaseGraph(1, false));
    graphs.push_back(KITE_TRY(GraphPlacement("decode", 1, decode.executable().graph(), target)));
  }
  const int32_t chunk = std::min(options.prefill_chunk, engine->context_length());
  if (chunk > 1) {
    const Engine::GraphLease prefill = KITE_TRY(engine->LeaseGraph(chunk, false));
    graphs.push_back(
        KITE_TRY(GraphPlacement("prefill", chunk, prefill.executable().graph(), target)));
  }
  return Json{{"model", path},
              {"chip", {{"name", chip.features.name}, {"hexagon", chip.features.hexagon}}},
              {"assumed_activations", "16-bit where the graph states no encoding"},
              {"context", engine->context_length()},
              {"graphs", graphs}};
}

std::string RenderNpuPlacementText(const Json& placement) {
  const Json& chip = placement["chip"];
  std::string out = "chip " + chip["name"].get<std::string>() + " (" +
                    chip["hexagon"].get<std::string>() + "), context " +
                    std::to_string(placement["context"].get<int32_t>()) + ", activations " +
                    placement["assumed_activations"].get<std::string>() + "\n";
  for (const Json& graph : placement["graphs"]) {
    const int32_t tokens = graph["tokens"].get<int32_t>();
    out += graph["phase"].get<std::string>() + " (" + std::to_string(tokens) +
           (tokens == 1 ? " token" : " tokens") + "): NPU " +
           std::to_string(graph["npu"].get<int64_t>()) + " ops, CPU " +
           std::to_string(graph["cpu"].get<int64_t>()) + " ops, " +
           std::to_string(graph["boundaries"].size()) + " NPU <-> CPU boundaries (" +
           std::to_string(graph["convert_nodes"].get<int64_t>()) + " convert nodes in the graph)\n";
    for (const Json& pass : graph["passes"]) out += "  pass " + pass.get<std::string>() + "\n";
    for (const Json& d : graph["decomposed"]) {
      out += "  decomposed " + d["node"].get<std::string>() + ": " +
             d["reason"].get<std::string>() + "\n";
    }
    for (const Json& b : graph["boundaries"]) {
      out += "  convert " + b["value"].get<std::string>() + " to the " +
             b["to"].get<std::string>() + " (read by " + b["reader"].get<std::string>() + ")\n";
    }
    for (const Json& node : graph["nodes"]) {
      std::string line = "  " + node["unit"].get<std::string>() + "  " +
                         node["op"].get<std::string>() + " " + node["node"].get<std::string>();
      if (node.contains("reason")) line += "  (" + node["reason"].get<std::string>() + ")";
      out += line + "\n";
    }
  }
  return out;
}

}  // namespace kite::cli
