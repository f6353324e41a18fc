// How `kite eval compare` shows its statistics: text laid out as llama-perplexity
// --kl-divergence prints them (so the two read side by side), or JSON.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "eval/compare_stats.h"

namespace kite::cli {

std::string CompareText(const CompareStats& stats);
nlohmann::ordered_json CompareJson(const CompareStats& stats);

}  // namespace kite::cli
