// UTF-8 helpers shared by the tokenizers, the GGUF reader (key validation) and streaming decode.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace kite {

// Length of the sequence a lead byte starts (1..4), or 0 for a continuation / invalid lead byte.
inline int Utf8SequenceLength(uint8_t lead) {
  if (lead < 0x80) return 1;
  if ((lead & 0xe0) == 0xc0) return lead >= 0xc2 ? 2 : 0;
  if ((lead & 0xf0) == 0xe0) return 3;
  if ((lead & 0xf8) == 0xf0) return lead <= 0xf4 ? 4 : 0;
  return 0;
}

// Decodes the code point at text[pos]. On invalid input returns U+FFFD and consumes one byte.
// `length` receives the number of bytes consumed.
char32_t DecodeUtf8(std::string_view text, size_t pos, size_t* length);

// True when `text` is well-formed UTF-8 (no overlongs, no surrogates, nothing past U+10FFFF).
bool IsValidUtf8(std::string_view text);

// Bytes at the end of `text` that begin an incomplete (possibly still valid) sequence; a
// streaming decoder holds these back until the next token completes them.
size_t IncompleteUtf8Suffix(std::string_view text);

void AppendUtf8(char32_t code_point, std::string* out);

}  // namespace kite
