#include "cli/eval_sqnr_report.h"

#include <cmath>
#include <cstdio>

#include "eval/sqnr_plot.h"

namespace kite::cli {

namespace {

std::string Db(double db) {
  if (std::isinf(db)) return db > 0 ? "inf" : "-inf";
  char text[32];
  std::snprintf(text, sizeof text, "%.2f", db);
  return text;
}

// JSON has no infinity: a value without error is null.
nlohmann::ordered_json DbJson(double db) { return std::isfinite(db) ? nlohmann::ordered_json(db) : nlohmann::ordered_json(); }

}  // namespace

std::string SqnrText(const SqnrReport& report, const SqnrOptions& options, int32_t top) {
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line, "SQNR over %lld tokens (%lld windows of %d), %s\n",
                static_cast<long long>(report.tokens), static_cast<long long>(report.windows), options.scoring.ctx,
                options.propagate ? "errors propagated down the layers"
                                  : "isolated: each node computed from the reference's inputs");
  out += line;
  std::snprintf(line, sizeof line, "median: tensor %s dB, layer %s dB; ! marks more than %.1f dB below the median\n\n",
                Db(report.median_tensor_db).c_str(), Db(report.median_layer_db).c_str(), options.flag_db);
  out += line;
  out += "  layer  SQNR dB  worst tensor\n";
  for (const LayerSqnr& layer : report.layers) {
    std::snprintf(line, sizeof line, "%s %5s  %7s  %s\n", layer.flagged ? "!" : " ",
                  LayerLabel(layer.layer, report.n_layers).c_str(), Db(layer.sqnr_db).c_str(), layer.worst.c_str());
    out += line;
  }
  out += "\n  SQNR dB  tensor (worst first)\n";
  int32_t shown = 0;
  for (const TensorSqnr& tensor : report.tensors) {
    if (top > 0 && shown == top) {
      std::snprintf(line, sizeof line, "  ... %zu more (--top 0 lists all)\n", report.tensors.size() - shown);
      out += line;
      break;
    }
    std::snprintf(line, sizeof line, "%s %7s  %s (%s)\n", tensor.flagged ? "!" : " ", Db(tensor.sqnr_db).c_str(),
                  tensor.name.c_str(), tensor.kind.c_str());
    out += line;
    ++shown;
  }
  return out;
}

nlohmann::ordered_json SqnrJson(const SqnrReport& report, const SqnrOptions& options) {
  nlohmann::ordered_json layers = nlohmann::ordered_json::array();
  for (const LayerSqnr& layer : report.layers) {
    layers.push_back({{"layer", LayerLabel(layer.layer, report.n_layers)},
                      {"sqnr_db", DbJson(layer.sqnr_db)},
                      {"worst", layer.worst},
                      {"flagged", layer.flagged}});
  }
  nlohmann::ordered_json tensors = nlohmann::ordered_json::array();
  for (const TensorSqnr& tensor : report.tensors) {
    tensors.push_back({{"name", tensor.name},
                       {"kind", tensor.kind},
                       {"layer", LayerLabel(tensor.layer, report.n_layers)},
                       {"sqnr_db", DbJson(tensor.sqnr_db)},
                       {"flagged", tensor.flagged}});
  }
  return {{"tokens", report.tokens},
          {"windows", report.windows},
          {"ctx", options.scoring.ctx},
          {"mode", options.propagate ? "propagated" : "isolated"},
          {"flag_db", options.flag_db},
          {"median_tensor_db", DbJson(report.median_tensor_db)},
          {"median_layer_db", DbJson(report.median_layer_db)},
          {"layers", layers},
          {"tensors", tensors}};
}

}  // namespace kite::cli
