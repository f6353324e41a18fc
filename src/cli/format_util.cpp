#include "cli/format_util.h"

#include <cstdio>

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

}  // namespace kite::cli
