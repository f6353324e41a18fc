// `kite profile`'s outputs: a text summary and per-op table, JSON, a Chrome-trace/Perfetto
// timeline and a self-contained HTML report with inline SVG plots.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "profile/profile.h"

namespace kite {

// Summary first, then one table per graph (node, op, unit, shape, bytes, MACs, time, bound).
std::string ProfileText(const ProfileResult& r);
// {"model", "chip", "recipe", "options", "summary", "prefill": {..., "ops": [...]}, "decode"}
nlohmann::json ProfileJson(const ProfileResult& r);
// Chrome's trace-event format (chrome://tracing, ui.perfetto.dev): one complete event per op,
// the prefill chunk then the decode step, one track per compute unit.
nlohmann::json ProfileTrace(const ProfileResult& r);
// One HTML page, no external resources: summary, per-layer and per-op time plots, placement.
std::string ProfileHtml(const ProfileResult& r);

}  // namespace kite
