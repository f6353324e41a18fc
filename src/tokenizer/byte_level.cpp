#include "tokenizer/byte_level.h"

#include <array>

#include "base/utf8.h"

namespace kite::tok {

namespace {

// Bytes that are printable Latin-1 keep their code point; the other 68 bytes are numbered
// 256, 257, ... in byte order (GPT-2's bytes_to_unicode).
struct ByteMaps {
  std::array<char32_t, 256> to_unicode{};
  std::array<int16_t, 324> to_byte{};  // code point -> byte, -1 where none

  ByteMaps() {
    to_byte.fill(-1);
    char32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || b >= 0xae;
      to_unicode[b] = printable ? static_cast<char32_t>(b) : next++;
      to_byte[to_unicode[b]] = static_cast<int16_t>(b);
    }
  }
};

const ByteMaps& Maps() {
  static const ByteMaps maps;
  return maps;
}

}  // namespace

char32_t ByteToUnicode(uint8_t byte) { return Maps().to_unicode[byte]; }

void ByteLevelEncode(std::string_view bytes, std::string* out) {
  for (char c : bytes) AppendUtf8(Maps().to_unicode[static_cast<uint8_t>(c)], out);
}

bool ByteLevelDecode(std::string_view text, std::string* out) {
  const ByteMaps& maps = Maps();
  const size_t start = out->size();
  for (size_t pos = 0; pos < text.size();) {
    size_t length;
    const char32_t cp = DecodeUtf8(text, pos, &length);
    const bool invalid = cp == 0xfffd && length == 1;
    if (invalid || cp >= maps.to_byte.size() || maps.to_byte[cp] < 0) {
      out->resize(start);
      return false;
    }
    out->push_back(static_cast<char>(maps.to_byte[cp]));
    pos += length;
  }
  return true;
}

}  // namespace kite::tok
