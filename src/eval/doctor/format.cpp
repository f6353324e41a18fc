#include "eval/doctor/format.h"

#include <cstdio>

namespace kite::doctor {

std::string Fixed(double value, int digits) {
  char text[64];
  std::snprintf(text, sizeof(text), "%.*f", digits, value);
  return text;
}

std::string Significant(double value) {
  char text[64];
  std::snprintf(text, sizeof(text), "%.3g", value);
  return text;
}

std::string Printable(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default: out += c;
    }
  }
  return out;
}

std::string ByteSize(uint64_t bytes) {
  const double mib = static_cast<double>(bytes) / (1 << 20);
  return mib < 1024 ? Fixed(mib, 1) + " MiB" : Fixed(mib / 1024, 1) + " GiB";
}

}  // namespace kite::doctor
