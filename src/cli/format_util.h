// Small formatting helpers shared by the CLI's human-readable output.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kite::cli {

std::string HumanBytes(uint64_t bytes);   // "1.50 MiB"
std::string HumanCount(uint64_t count);   // "1.24 B", "135.0 M", "4096"
std::string Joined(const std::vector<std::string>& names);  // "a, b, c"
// "2GiB", "512MiB", "1.5GB", "4096" (bytes): a whole number of bytes > 0, or nullopt. Binary
// units (KiB, MiB, GiB) are powers of 1024, decimal ones (KB, MB, GB) of 1000.
std::optional<uint64_t> ParseByteSize(std::string_view text);

}  // namespace kite::cli
