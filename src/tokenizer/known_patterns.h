// The pre-tokenizer regexes GPT-2, Llama 3 and Qwen2 were trained with (llama.cpp's GGUF
// files name them in tokenizer.ggml.pre), and exact matchers for them on ASCII text.
//
// Matching these with PCRE2 costs a few hundred instructions per piece, most of the encode time
// for English. The matchers below decide the match at a position when the text it depends on is
// ASCII, and give up (return 0) when a non-ASCII character could change it, so PCRE2 decides
// exactly those cases. Regex::Split uses them for the patterns they implement.
#pragma once

#include <cstddef>
#include <string_view>

namespace kite::tok {

inline constexpr std::string_view kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
inline constexpr std::string_view kLlama3Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3})"
    R"(| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
inline constexpr std::string_view kQwen2Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N})"
    R"(| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// "gpt2", "llama3" or "qwen2" for one of the patterns above, else "".
std::string_view KnownPatternName(std::string_view pattern);

// Length of the regex's match starting at text[pos] (pos < text.size()), or 0 when PCRE2 must
// decide.
using AsciiMatcher = size_t (*)(std::string_view text, size_t pos);

// The matcher for a known pattern, nullptr for any other.
AsciiMatcher AsciiMatcherFor(std::string_view pattern);

}  // namespace kite::tok
