#include "cli/escape.h"

namespace kite::cli {

namespace {

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::string ProcessEscapes(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\\' || i + 1 == text.size()) {
      out += text[i];
      continue;
    }
    const char next = text[i + 1];
    char replacement = 0;
    switch (next) {
      case 'n': replacement = '\n'; break;
      case 't': replacement = '\t'; break;
      case 'r': replacement = '\r'; break;
      case '\\': replacement = '\\'; break;
      case '"': replacement = '"'; break;
      case '\'': replacement = '\''; break;
      case 'x': {
        int value = 0, digits = 0;
        while (digits < 2 && i + 2 + digits < text.size() && HexDigit(text[i + 2 + digits]) >= 0) {
          value = value * 16 + HexDigit(text[i + 2 + digits]);
          ++digits;
        }
        if (digits == 0) break;
        out += static_cast<char>(value);
        i += 1 + digits;
        continue;
      }
      default: break;
    }
    if (replacement == 0) {
      out += '\\';
      continue;
    }
    out += replacement;
    ++i;
  }
  return out;
}

}  // namespace kite::cli
