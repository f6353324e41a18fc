#include "cli/inspect_placement.h"

#include <map>

#include "cli/format_util.h"

namespace kite::cli {

namespace {

Json GraphSummary(const std::string& phase, int32_t tokens, const Executable& compiled) {
  const Placement& placement = compiled.placement();
  const std::span<const Node> nodes = compiled.graph().nodes();
  std::map<std::string, int64_t> per_backend;
  Json declined = Json::array();
  Json placed = Json::array();
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].is_view()) continue;
    const NodePlacement& place = placement.nodes[i];
    const std::string& backend = placement.backend_names[place.backend];
    ++per_backend[backend];
    placed.push_back(
        {{"node", nodes[i].name}, {"op", std::string(nodes[i].op_name())}, {"backend", backend}});
    for (const Declined& refusal : place.declined) {
      declined.push_back({{"node", nodes[i].name},
                          {"op", std::string(nodes[i].op_name())},
                          {"backend", refusal.backend},
                          {"reason", refusal.reason}});
    }
  }
  return {{"phase", phase},
          {"tokens", tokens},
          {"nodes", per_backend},
          {"partitions", placement.partitions.size()},
          {"declined", declined},
          {"placement", placed},
          {"report", placement.Report(compiled.graph())}};
}

}  // namespace

Result<Json> InspectPlacement(const std::string& path, const EngineOptions& options) {
  auto engine = KITE_TRY(Engine::Load(path, options));
  Json graphs = Json::array();
  graphs.push_back(GraphSummary("decode", 1, KITE_TRY(engine->LeaseGraph(1, false)).executable()));
  const int32_t chunk = std::min(options.prefill_chunk, engine->context_length());
  if (chunk > 1) {
    graphs.push_back(
        GraphSummary("prefill", chunk, KITE_TRY(engine->LeaseGraph(chunk, false)).executable()));
  }
  const Json kv_cache = {{"type", std::string(DTypeName(options.kv_dtype))},
                         {"context", engine->context_length()},
                         {"bytes", engine->KvCacheBytes()},
                         {"bytes_per_token", engine->KvBytesPerToken()}};
  return Json{
      {"model", path}, {"backend", options.backend}, {"kv_cache", kv_cache}, {"graphs", graphs}};
}

Json PlacementJson(Json placement) {
  for (Json& graph : placement["graphs"]) graph.erase("report");
  return placement;
}

std::string RenderPlacementText(const Json& placement) {
  const Json& kv = placement["kv_cache"];
  std::string out = "KV cache: " + kv["type"].get<std::string>() + ", " +
                    HumanBytes(kv["bytes"].get<uint64_t>()) + " for " +
                    std::to_string(kv["context"].get<int32_t>()) + " positions (" +
                    std::to_string(kv["bytes_per_token"].get<uint64_t>()) + " bytes a token)\n";
  for (const Json& graph : placement["graphs"]) {
    const int32_t tokens = graph["tokens"].get<int32_t>();
    out += graph["phase"].get<std::string>() + " (" + std::to_string(tokens) +
           (tokens == 1 ? " token" : " tokens") + "):";
    for (const auto& [backend, count] : graph["nodes"].items()) {
      out += " " + std::to_string(count.get<int64_t>()) + " nodes on " + backend + ",";
    }
    out += " " + std::to_string(graph["partitions"].get<size_t>()) + " partition(s)\n";
    out += graph["report"].get<std::string>() + "\n";
  }
  return out;
}

}  // namespace kite::cli
