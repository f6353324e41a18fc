#include "cli/escape.h"

#include "base/hex.h"

namespace kite::cli {

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
