// GPT-2's byte <-> unicode map: byte-level BPE vocabularies spell every byte as a printable
// character ('Ġ' is the space byte 0x20, 'Ċ' is '\n'), so token texts are valid UTF-8.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace kite::tok {

// The code point GPT-2 uses for `byte`.
char32_t ByteToUnicode(uint8_t byte);

// Appends the byte-level spelling of `bytes` (each byte -> one code point) to `out`.
void ByteLevelEncode(std::string_view bytes, std::string* out);

// Maps a byte-level token text back to the bytes it stands for. Returns false, leaving `out`
// untouched, when some character is not in the map (added tokens such as "<|eot_id|>" pass
// since printable ASCII maps to itself).
bool ByteLevelDecode(std::string_view text, std::string* out);

}  // namespace kite::tok
