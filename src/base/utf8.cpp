#include "base/utf8.h"

namespace kite {

char32_t DecodeUtf8(std::string_view text, size_t pos, size_t* length) {
  const auto byte = [&](size_t i) { return static_cast<uint8_t>(text[pos + i]); };
  const uint8_t lead = byte(0);
  const int n = Utf8SequenceLength(lead);
  *length = 1;
  if (n == 1) return lead;
  if (n == 0 || pos + n > text.size()) return 0xfffd;
  char32_t cp = lead & (0xff >> (n + 1));
  for (int i = 1; i < n; ++i) {
    if ((byte(i) & 0xc0) != 0x80) return 0xfffd;
    cp = (cp << 6) | (byte(i) & 0x3f);
  }
  const bool overlong = (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000);
  if (overlong || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0xfffd;
  *length = n;
  return cp;
}

bool IsValidUtf8(std::string_view text) {
  for (size_t pos = 0; pos < text.size();) {
    size_t length;
    char32_t cp = DecodeUtf8(text, pos, &length);
    // U+FFFD consumed as one byte means the input was not that code point.
    if (cp == 0xfffd && length == 1) return false;
    pos += length;
  }
  return true;
}

size_t IncompleteUtf8Suffix(std::string_view text) {
  // Look back at most 3 bytes for a lead byte whose sequence runs past the end.
  for (size_t back = 1; back <= 3 && back <= text.size(); ++back) {
    const uint8_t byte = static_cast<uint8_t>(text[text.size() - back]);
    if ((byte & 0xc0) == 0x80) continue;  // continuation byte: keep looking
    const int n = Utf8SequenceLength(byte);
    return n > static_cast<int>(back) ? back : 0;
  }
  return 0;
}

void AppendUtf8(char32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xc0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xe0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  } else {
    out->push_back(static_cast<char>(0xf0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3f)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  }
}

}  // namespace kite
