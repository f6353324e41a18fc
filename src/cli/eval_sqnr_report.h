// How `kite eval sqnr` shows its report: text tables (per layer, then tensors worst first) or JSON.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "eval/sqnr.h"

namespace kite::cli {

// `top`: tensors listed (0: all).
std::string SqnrText(const SqnrReport& report, const SqnrOptions& options, int32_t top);
nlohmann::ordered_json SqnrJson(const SqnrReport& report, const SqnrOptions& options);

}  // namespace kite::cli
