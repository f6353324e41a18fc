// A self-contained SVG bar chart of per-layer SQNR (`kite eval sqnr --plot FILE.svg`): one bar per
// layer (the embedding, blocks 0..n-1, the head), flagged layers in red, the median as a dashed
// line, both axes labelled. Layers without error (infinite SQNR) reach the top, marked "∞".
#pragma once

#include <string>
#include <string_view>

#include "eval/sqnr.h"

namespace kite {

std::string SqnrPlotSvg(const SqnrReport& report, std::string_view title);

// "emb", "0".."n-1", "head": how a layer index is shown.
std::string LayerLabel(int32_t layer, int32_t n_layers);

}  // namespace kite
