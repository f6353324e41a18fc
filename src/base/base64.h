// Standard base64 (RFC 4648, with padding), for binary fields inside JSON files.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace kite {

// nullopt when `text` is not base64 (a character outside the alphabet, bad length or padding).
std::optional<std::vector<uint8_t>> DecodeBase64(std::string_view text);

}  // namespace kite
