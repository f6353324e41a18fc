#include "cli/format_util.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <utility>

namespace kite::cli {

std::string HumanBytes(uint64_t bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024.0 && unit < 4) {
    value /= 1024.0;
    ++unit;
  }
  char text[32];
  if (unit == 0) {
    std::snprintf(text, sizeof(text), "%llu B", static_cast<unsigned long long>(bytes));
  } else {
    std::snprintf(text, sizeof(text), "%.2f %s", value, kUnits[unit]);
  }
  return text;
}

std::string HumanCount(uint64_t count) {
  char text[32];
  if (count >= 1'000'000'000) {
    std::snprintf(text, sizeof(text), "%.2f B", count / 1e9);
  } else if (count >= 1'000'000) {
    std::snprintf(text, sizeof(text), "%.1f M", count / 1e6);
  } else if (count >= 10'000) {
    std::snprintf(text, sizeof(text), "%.1f K", count / 1e3);
  } else {
    std::snprintf(text, sizeof(text), "%llu", static_cast<unsigned long long>(count));
  }
  return text;
}

std::string Joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& name : names) out += (out.empty() ? "" : ", ") + name;
  return out;
}

std::optional<uint64_t> ParseByteSize(std::string_view text) {
  static const std::pair<std::string_view, double> kUnits[] = {
      {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}, {"KB", 1e3},
      {"MB", 1e6},     {"GB", 1e9},        {"B", 1.0},            {"", 1.0}};
  for (const auto& [unit, scale] : kUnits) {
    if (!text.ends_with(unit)) continue;
    const std::string number(text.substr(0, text.size() - unit.size()));
    if (number.empty() || !(std::isdigit(static_cast<unsigned char>(number[0])))) return std::nullopt;
    char* end = nullptr;
    const double value = std::strtod(number.c_str(), &end) * scale;
    if (end != number.c_str() + number.size() || !(value >= 1) || value > 1.8e19 ||
        value != std::floor(value)) {
      return std::nullopt;
    }
    return static_cast<uint64_t>(value);
  }
  return std::nullopt;
}

}  // namespace kite::cli
