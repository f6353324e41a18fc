#include "cli/inspect_onnx.h"

#include "format/onnx_file.h"
#include "models/onnx_import.h"

namespace kite::cli {

namespace {

// Node names listed per fused op in the text table; --json lists them all.
constexpr size_t kListedNodes = 4;

}  // namespace

Result<Json> InspectOnnx(const std::string& path) {
  const OnnxModel model = KITE_TRY(OnnxModel::Open(path));
  const OnnxImport import = KITE_TRY(RecognizeOnnx(model));
  Json onnx;
  onnx["file"] = path;
  onnx["producer"] = model.producer();
  Json opsets = Json::object();
  for (const auto& [domain, version] : model.opsets()) opsets[domain.empty() ? "ai.onnx" : domain] = version;
  onnx["opsets"] = opsets;
  onnx["bindings"] = import.bindings;
  onnx["kv_cache_inputs"] = import.kv_inputs;
  onnx["folded_nodes"] = import.folded_nodes;
  Json fused = Json::array();
  for (const OnnxFusion& f : import.fusions) {
    Json nodes = Json::array();
    for (size_t n : f.nodes) {
      nodes.push_back({{"name", model.nodes()[n].name}, {"op", model.nodes()[n].op_type}});
    }
    fused.push_back({{"kite_op", f.kite_op}, {"layer", f.layer}, {"onnx_nodes", nodes}});
  }
  onnx["fused"] = fused;
  onnx["unmapped"] = import.unmapped;
  onnx["error"] = import.error;
  return Json{{"onnx", onnx}};
}

bool OnnxImportable(const Json& report) {
  const Json& onnx = report["onnx"];
  return onnx["error"].get<std::string>().empty() && onnx["unmapped"].empty();
}

std::string RenderOnnxText(const Json& report) {
  const Json& onnx = report["onnx"];
  std::string text = "ONNX import of " + onnx["file"].get<std::string>() + " (" +
                     onnx["producer"].get<std::string>() + ", opsets";
  for (const auto& [domain, version] : onnx["opsets"].items()) {
    text += " " + domain + " " + std::to_string(version.get<int64_t>());
  }
  text += ")\n  sizes bound for folding:";
  for (const Json& b : onnx["bindings"]) text += " " + b.get<std::string>() + ";";
  text += "\n  KV cache inputs (become Kite's paged KV cache): ";
  text += onnx["kv_cache_inputs"].empty() ? "none" : std::to_string(onnx["kv_cache_inputs"].size());
  text += "\n  nodes folded to constants: " + std::to_string(onnx["folded_nodes"].get<int64_t>()) +
          "\n  fused into Kite ops:\n";
  for (const Json& f : onnx["fused"]) {
    const int64_t layer = f["layer"].get<int64_t>();
    const Json& nodes = f["onnx_nodes"];
    std::string line = "    " + (layer >= 0 ? "blk." + std::to_string(layer) + " " : std::string()) +
                       f["kite_op"].get<std::string>() + " <- " + std::to_string(nodes.size()) +
                       " node" + (nodes.size() == 1 ? "" : "s") + ":";
    for (size_t i = 0; i < std::min(nodes.size(), kListedNodes); ++i) {
      line += " " + nodes[i]["name"].get<std::string>() + " (" + nodes[i]["op"].get<std::string>() + ")";
    }
    if (nodes.size() > kListedNodes) line += " +" + std::to_string(nodes.size() - kListedNodes) + " more";
    text += line + "\n";
  }
  if (!onnx["error"].get<std::string>().empty()) {
    text += "  not recognised: " + onnx["error"].get<std::string>() + "\n";
  }
  text += "  not mapped: " + (onnx["unmapped"].empty() ? std::string("none") : std::to_string(onnx["unmapped"].size()) + " nodes") + "\n";
  for (const Json& u : onnx["unmapped"]) text += "    " + u.get<std::string>() + "\n";
  return text;
}

}  // namespace kite::cli
