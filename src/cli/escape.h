// llama.cpp's -e/--escape, on by default in Kite: backslash sequences typed in a -p prompt or a
// --stop string become the characters they name, so `--stop '\n%'` stops on newline + '%'.
#pragma once

#include <string>
#include <string_view>

namespace kite::cli {

// \n \t \r \\ \" \' and \xHH (one or two hex digits) become their characters; any other
// backslash, and a \x without a hex digit, is kept as typed.
std::string ProcessEscapes(std::string_view text);

}  // namespace kite::cli
