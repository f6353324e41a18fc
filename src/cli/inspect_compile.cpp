#include "cli/inspect_compile.h"

#include "cli/format_util.h"
#include "format/gguf.h"
#include "models/compiled_gguf.h"

namespace kite::cli {

Result<std::optional<Json>> InspectCompile(const std::string& path) {
  if (!path.ends_with(".gguf")) return std::nullopt;
  const GgufFile gguf = KITE_TRY(GgufFile::Open(path));
  const std::optional<CompiledTarget> target = KITE_TRY(ReadCompiledKeys(gguf));
  if (!target) return std::nullopt;
  Json graphs = Json::parse(target->graphs, nullptr, false);
  if (!graphs.is_array()) {
    return InvalidInput(path + ": key 'kite.compile.graphs' is not a JSON array of graphs");
  }
  return Json{{"version", target->version},
              {"chip", target->chip},
              {"hexagon", target->hexagon},
              {"recipe", target->recipe},
              {"contexts", target->contexts},
              {"prefill_chunk", target->prefill_chunk},
              {"session_limit", target->session_limit},
              {"graphs", std::move(graphs)}};
}

std::string RenderCompileText(const Json& compile) {
  std::string contexts;
  for (const Json& context : compile["contexts"]) {
    contexts += (contexts.empty() ? "" : ", ") + std::to_string(context.get<int64_t>());
  }
  std::string out = "compiled for " + compile["chip"].get<std::string>() + " (" +
                    compile["hexagon"].get<std::string>() + "), recipe " +
                    compile["recipe"].get<std::string>() + ", compile format " +
                    std::to_string(compile["version"].get<int64_t>()) + "\n" +
                    "contexts: " + contexts + "; prefill chunk " +
                    std::to_string(compile["prefill_chunk"].get<int64_t>()) + "; session limit " +
                    HumanBytes(compile["session_limit"].get<uint64_t>()) + "\n";
  for (const Json& graph : compile["graphs"]) {
    const int tokens = graph.value("tokens", 0);
    out += graph.value("phase", "?") + " (" + std::to_string(tokens) +
           (tokens == 1 ? " token" : " tokens") + ", context " +
           std::to_string(graph.value("context", 0)) + "):\n";
    for (const Json& partition : graph.value("partitions", Json::array())) {
      const Json nodes = partition.value("nodes", Json::array());
      const Json counts = partition.value("ops", Json::object());  // items() refers into it
      std::string ops;
      for (const auto& [op, count] : counts.items()) {
        ops += (ops.empty() ? "" : ", ") + op + " " + std::to_string(count.get<int64_t>());
      }
      out += "  " + partition.value("unit", "?") + " (" + partition.value("backend", "?") +
             "): " + std::to_string(nodes.size()) + " nodes";
      if (!nodes.empty()) {
        out += ", " + nodes.front().get<std::string>() + " .. " + nodes.back().get<std::string>();
      }
      out += " [" + ops + "]\n";
      const Json declined = partition.value("declined", Json::array());
      if (!declined.empty()) {  // the first refusal says why this piece left the NPU
        out += "    " + declined[0].value("backend", "?") + " declined " +
               declined[0].value("node", "?") + ": " + declined[0].value("reason", "?") + "\n";
      }
    }
    for (const Json& split : graph.value("splits", Json::array())) {
      out += "  piece blk." + std::to_string(split["layers"][0].get<int64_t>()) + "-" +
             std::to_string(split["layers"][1].get<int64_t>()) + ": " +
             HumanBytes(split.value("bytes", uint64_t{0})) + " (weights " +
             HumanBytes(split.value("weight_bytes", uint64_t{0})) + ", KV " +
             HumanBytes(split.value("kv_bytes", uint64_t{0})) + ", activations " +
             HumanBytes(split.value("activation_bytes", uint64_t{0})) + ")\n";
    }
  }
  return out;
}

}  // namespace kite::cli
