// Small formatting helpers shared by the CLI's human-readable output.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kite::cli {

std::string HumanBytes(uint64_t bytes);   // "1.50 MiB"
std::string HumanCount(uint64_t count);   // "1.24 B", "135.0 M", "4096"
std::string Joined(const std::vector<std::string>& names);  // "a, b, c"

}  // namespace kite::cli
