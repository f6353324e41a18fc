// Small formatting helpers shared by the CLI's human-readable output.
#pragma once

#include <cstdint>
#include <string>

namespace kite::cli {

std::string HumanBytes(uint64_t bytes);   // "1.50 MiB"
std::string HumanCount(uint64_t count);   // "1.24 B", "135.0 M", "4096"

}  // namespace kite::cli
