#include "eval/sqnr_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "base/html_escape.h"

namespace kite {

std::string LayerLabel(int32_t layer, int32_t n_layers) {
  if (layer < 0) return "emb";
  if (layer >= n_layers) return "head";
  return std::to_string(layer);
}

namespace {

std::string Number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", value);
  return text;
}

}  // namespace

std::string SqnrPlotSvg(const SqnrReport& report, std::string_view title) {
  constexpr double kLeft = 70, kRight = 20, kTop = 40, kBottom = 60, kPlotHeight = 300;
  const size_t n = report.layers.size();
  const double bar_step = std::clamp(800.0 / static_cast<double>(std::max<size_t>(n, 1)), 12.0, 120.0);
  const double plot_width = bar_step * static_cast<double>(n);
  const double width = kLeft + plot_width + kRight, height = kTop + kPlotHeight + kBottom;
  // The y axis runs from min(0, lowest) to the highest finite SQNR, rounded out to a tick.
  double low = 0.0, high = 10.0;
  for (const LayerSqnr& layer : report.layers) {
    if (!std::isfinite(layer.sqnr_db)) continue;
    low = std::min(low, layer.sqnr_db);
    high = std::max(high, layer.sqnr_db);
  }
  const double tick = high - low > 100 ? 20.0 : high - low > 40 ? 10.0 : 5.0;
  low = std::floor(low / tick) * tick;
  high = std::ceil(high / tick) * tick + tick;
  const auto y = [&](double db) { return kTop + kPlotHeight * (high - db) / (high - low); };

  std::string svg;
  svg += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + Number(width) + "\" height=\"" + Number(height) +
         "\" font-family=\"sans-serif\" font-size=\"11\">\n";
  svg += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  svg += "<text x=\"" + Number(width / 2) + "\" y=\"20\" text-anchor=\"middle\" font-size=\"14\">" +
         HtmlEscape(title) + "</text>\n";
  for (double db = low; db <= high + 1e-9; db += tick) {
    svg += "<line x1=\"" + Number(kLeft) + "\" x2=\"" + Number(kLeft + plot_width) + "\" y1=\"" + Number(y(db)) +
           "\" y2=\"" + Number(y(db)) + "\" stroke=\"#ddd\"/>\n";
    svg += "<text x=\"" + Number(kLeft - 6) + "\" y=\"" + Number(y(db) + 4) + "\" text-anchor=\"end\">" +
           Number(db) + "</text>\n";
  }
  for (size_t i = 0; i < n; ++i) {
    const LayerSqnr& layer = report.layers[i];
    const bool infinite = !std::isfinite(layer.sqnr_db);
    const double top = infinite ? y(high) : y(layer.sqnr_db), base = y(std::max(low, 0.0));
    const double x = kLeft + bar_step * static_cast<double>(i) + bar_step * 0.15;
    svg += "<rect x=\"" + Number(x) + "\" y=\"" + Number(std::min(top, base)) + "\" width=\"" +
           Number(bar_step * 0.7) + "\" height=\"" + Number(std::abs(base - top)) + "\" fill=\"" +
           (layer.flagged ? "#d62728" : "#1f77b4") + "\"><title>layer " +
           LayerLabel(layer.layer, report.n_layers) + ": " + (infinite ? "no error" : Number(layer.sqnr_db) + " dB") +
           " (worst: " + HtmlEscape(layer.worst) + ")</title></rect>\n";
    const std::string label = LayerLabel(layer.layer, report.n_layers);
    svg += "<text x=\"" + Number(x + bar_step * 0.35) + "\" y=\"" + Number(kTop + kPlotHeight + 14) +
           "\" text-anchor=\"middle\">" + label + "</text>\n";
    if (infinite) {
      svg += "<text x=\"" + Number(x + bar_step * 0.35) + "\" y=\"" + Number(top - 3) +
             "\" text-anchor=\"middle\">∞</text>\n";
    }
  }
  const double median = y(report.median_layer_db);
  svg += "<line x1=\"" + Number(kLeft) + "\" x2=\"" + Number(kLeft + plot_width) + "\" y1=\"" + Number(median) +
         "\" y2=\"" + Number(median) + "\" stroke=\"#555\" stroke-dasharray=\"4 3\"/>\n";
  svg += "<text x=\"" + Number(kLeft + plot_width - 2) + "\" y=\"" + Number(median - 4) +
         "\" text-anchor=\"end\" fill=\"#555\">median " + Number(report.median_layer_db) + " dB</text>\n";
  svg += "<line x1=\"" + Number(kLeft) + "\" x2=\"" + Number(kLeft) + "\" y1=\"" + Number(kTop) + "\" y2=\"" +
         Number(kTop + kPlotHeight) + "\" stroke=\"black\"/>\n";
  svg += "<line x1=\"" + Number(kLeft) + "\" x2=\"" + Number(kLeft + plot_width) + "\" y1=\"" +
         Number(kTop + kPlotHeight) + "\" y2=\"" + Number(kTop + kPlotHeight) + "\" stroke=\"black\"/>\n";
  svg += "<text x=\"" + Number(kLeft + plot_width / 2) + "\" y=\"" + Number(height - 20) +
         "\" text-anchor=\"middle\" font-size=\"13\">layer</text>\n";
  svg += "<text transform=\"translate(18 " + Number(kTop + kPlotHeight / 2) +
         ") rotate(-90)\" text-anchor=\"middle\" font-size=\"13\">SQNR (dB)</text>\n";
  svg += "</svg>\n";
  return svg;
}

}  // namespace kite
