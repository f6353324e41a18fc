// The HTML report: one file, inline CSS and SVG, no script and no external resource, so it opens
// anywhere (a browser offline, a CI artifact viewer).
#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "base/html_escape.h"

#include "profile/report.h"

namespace kite {

namespace {

std::string Fixed(double x, int digits) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", digits, x);
  return buffer;
}

const char* BoundColor(CostBound bound) {
  switch (bound) {
    case CostBound::kCompute: return "#4e79a7";
    case CostBound::kBandwidth: return "#f28e2b";
    case CostBound::kOverhead: return "#9c9c9c";
  }
  return "#4e79a7";
}

struct Bar {
  std::string label;
  double value = 0;  // milliseconds
  std::string color = "#4e79a7";
  std::string title;
};

// Horizontal bars, one row each, labels on the left, values on the right.
std::string HorizontalBars(const std::string& caption, const std::vector<Bar>& bars) {
  const int row = 16, label_w = 220, plot_w = 460, height = row * static_cast<int>(bars.size()) + 8;
  double top = 1e-12;
  for (const Bar& b : bars) top = std::max(top, b.value);
  std::string svg = "<figure><figcaption>" + HtmlEscape(caption) + "</figcaption><svg width=\"" +
                    std::to_string(label_w + plot_w + 90) + "\" height=\"" +
                    std::to_string(height) + "\" role=\"img\">";
  for (size_t i = 0; i < bars.size(); ++i) {
    const Bar& b = bars[i];
    const int y = 4 + row * static_cast<int>(i);
    const double w = plot_w * b.value / top;
    svg += "<text x=\"" + std::to_string(label_w - 6) + "\" y=\"" + std::to_string(y + 12) +
           "\" text-anchor=\"end\">" + HtmlEscape(b.label) + "</text>";
    svg += "<rect x=\"" + std::to_string(label_w) + "\" y=\"" + std::to_string(y + 2) +
           "\" width=\"" + Fixed(w, 1) + "\" height=\"" + std::to_string(row - 4) + "\" fill=\"" +
           b.color + "\"><title>" + HtmlEscape(b.title.empty() ? b.label : b.title) + "</title></rect>";
    svg += "<text x=\"" + Fixed(label_w + w + 4, 1) + "\" y=\"" + std::to_string(y + 12) + "\">" +
           Fixed(b.value, 3) + " ms</text>";
  }
  return svg + "</svg></figure>\n";
}

// Vertical bars per layer (x: layer, y: ms).
std::string LayerColumns(const std::string& caption, const std::vector<double>& ms) {
  const int plot_h = 160, col = std::max(4, 640 / std::max<int>(1, static_cast<int>(ms.size())));
  const int width = col * static_cast<int>(ms.size()) + 60;
  double top = 1e-12;
  for (double v : ms) top = std::max(top, v);
  std::string svg = "<figure><figcaption>" + HtmlEscape(caption) + "</figcaption><svg width=\"" +
                    std::to_string(width) + "\" height=\"" + std::to_string(plot_h + 30) +
                    "\" role=\"img\">";
  svg += "<text x=\"0\" y=\"12\">" + Fixed(top, 3) + " ms</text>";
  for (size_t i = 0; i < ms.size(); ++i) {
    const double h = plot_h * ms[i] / top;
    const int x = 50 + col * static_cast<int>(i);
    svg += "<rect x=\"" + std::to_string(x) + "\" y=\"" + Fixed(plot_h + 10 - h, 1) +
           "\" width=\"" + std::to_string(col - 1) + "\" height=\"" + Fixed(h, 1) +
           "\" fill=\"#4e79a7\"><title>layer " + std::to_string(i) + ": " + Fixed(ms[i], 3) +
           " ms</title></rect>";
  }
  svg += "<text x=\"50\" y=\"" + std::to_string(plot_h + 26) + "\">layer 0 … " +
         std::to_string(ms.size() == 0 ? 0 : ms.size() - 1) + "</text>";
  return svg + "</svg></figure>\n";
}

std::vector<double> PerLayer(const ProfileResult& r, const GraphCost& g) {
  std::vector<double> ms(std::max(0, r.config.n_layers), 0.0);
  for (const OpCost& op : g.ops) {
    if (op.layer >= 0 && op.layer < static_cast<int32_t>(ms.size())) ms[op.layer] += op.time_s * 1e3;
  }
  return ms;
}

std::vector<Bar> PerOpKind(const GraphCost& g) {
  std::map<std::string, double> ms;
  for (const OpCost& op : g.ops) ms[op.op] += op.time_s * 1e3;
  std::vector<Bar> bars;
  for (const auto& [op, v] : ms) bars.push_back({op, v, "#4e79a7", op});
  std::sort(bars.begin(), bars.end(), [](const Bar& a, const Bar& b) { return a.value > b.value; });
  return bars;
}

std::vector<Bar> SlowestOps(const GraphCost& g, size_t count) {
  std::vector<const OpCost*> ops;
  for (const OpCost& op : g.ops) ops.push_back(&op);
  std::stable_sort(ops.begin(), ops.end(), [](auto* a, auto* b) { return a->time_s > b->time_s; });
  std::vector<Bar> bars;
  for (size_t i = 0; i < std::min(count, ops.size()); ++i) {
    const OpCost& op = *ops[i];
    bars.push_back({op.node, op.time_s * 1e3, BoundColor(op.bound),
                    op.node + " " + op.op + " " + op.shape + " (" +
                        std::string(BoundName(op.bound)) + "-bound, " +
                        std::string(UnitName(op.unit)) + ")"});
  }
  return bars;
}

std::string Placement(const GraphCost& g) {
  std::string html = "<p>NPU " + std::to_string(g.npu_ops) + " ops, CPU " +
                     std::to_string(g.cpu_ops) + " ops.</p>";
  std::map<std::string, int> reasons;
  for (const OpCost& op : g.ops) {
    if (op.unit == ComputeUnit::kCpu) ++reasons[op.placement];
  }
  if (reasons.empty()) return html;
  html += "<table><tr><th>CPU fallback</th><th>ops</th></tr>";
  for (const auto& [reason, n] : reasons) {
    html += "<tr><td>" + HtmlEscape(reason) + "</td><td>" + std::to_string(n) + "</td></tr>";
  }
  return html + "</table>";
}

}  // namespace

std::string ProfileHtml(const ProfileResult& r) {
  const std::string title = "kite profile: " + r.config.source + " on " + r.chip.marketing +
                            " (" + r.chip.name + "), " + r.recipe.name;
  std::string html =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>" + HtmlEscape(title) +
      "</title><style>body{font:14px sans-serif;margin:2em;max-width:1000px}"
      "svg text{font:11px sans-serif}table{border-collapse:collapse}"
      "td,th{border:1px solid #ccc;padding:2px 8px;text-align:left}"
      "figcaption{font-weight:bold;margin:1em 0 .3em}.legend span{padding:0 8px;color:#fff}"
      "</style></head><body>\n<h1>" + HtmlEscape(title) + "</h1>\n";
  html += "<table>";
  auto row = [&](const std::string& k, const std::string& v) {
    html += "<tr><th>" + HtmlEscape(k) + "</th><td>" + HtmlEscape(v) + "</td></tr>";
  };
  row("time to first token (" + std::to_string(r.options.prompt) + "-token prompt)",
      Fixed(r.ttft_s * 1e3, 1) + " ms");
  row("prefill", Fixed(r.prefill_tps, 1) + " tokens/s");
  row("decode", Fixed(r.decode_tps, 2) + " tokens/s");
  row("peak memory", Fixed(r.peak_bytes / 1e9, 2) + " GB (weights " +
                         Fixed(r.weight_bytes / 1e9, 2) + " GB, KV cache " +
                         Fixed(r.kv_bytes / 1e9, 2) + " GB)");
  row("placement (decode graph)", "NPU " + std::to_string(r.decode.npu_ops) + " ops, CPU " +
                                      std::to_string(r.decode.cpu_ops) + " ops");
  row("graphs", "prefill chunk of " + std::to_string(r.options.chunk) + " tokens, decode step; static context " +
                    std::to_string(r.options.ctx));
  row("chip parameters", r.chip.cost.fitted_from);
  html += "</table>\n<p>An estimate from Kite's cost model (docs/cost_model.md), not a measurement.</p>\n";
  html += "<p class=\"legend\">bound: <span style=\"background:#4e79a7\">compute</span>"
          "<span style=\"background:#f28e2b\">bandwidth</span>"
          "<span style=\"background:#9c9c9c\">overhead</span></p>\n";
  html += "<h2>Per layer</h2>\n";
  html += LayerColumns("prefill chunk: time per layer", PerLayer(r, r.prefill));
  html += LayerColumns("decode step: time per layer", PerLayer(r, r.decode));
  html += "<h2>Per op</h2>\n";
  html += HorizontalBars("prefill chunk: time per op kind", PerOpKind(r.prefill));
  html += HorizontalBars("decode step: time per op kind", PerOpKind(r.decode));
  html += HorizontalBars("prefill chunk: the 25 slowest ops", SlowestOps(r.prefill, 25));
  html += HorizontalBars("decode step: the 25 slowest ops", SlowestOps(r.decode, 25));
  html += "<h2>Placement</h2>\n" + Placement(r.decode);
  return html + "</body></html>\n";
}

}  // namespace kite
