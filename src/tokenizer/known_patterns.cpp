#include "tokenizer/known_patterns.h"

#include <array>
#include <cstdint>

namespace kite::tok {

namespace {

// ASCII as the patterns see it: \p{L}, \p{N}, \s (White_Space) and the rest. Any byte of a
// multi-byte character is kNonAscii: its class is unknown here.
enum class Cls : uint8_t { kLetter, kDigit, kSpace, kOther, kNonAscii };

constexpr std::array<Cls, 256> MakeClasses() {
  std::array<Cls, 256> classes{};
  for (int c = 0; c < 256; ++c) {
    if (c >= 0x80) {
      classes[c] = Cls::kNonAscii;
    } else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
      classes[c] = Cls::kLetter;
    } else if (c >= '0' && c <= '9') {
      classes[c] = Cls::kDigit;
    } else if ((c >= 0x09 && c <= 0x0d) || c == ' ') {
      classes[c] = Cls::kSpace;
    } else {
      classes[c] = Cls::kOther;
    }
  }
  return classes;
}

constexpr std::array<Cls, 256> kClasses = MakeClasses();

// The class of text[i]; kSpace past the end never happens as callers check bounds.
Cls At(std::string_view text, size_t i) { return kClasses[static_cast<uint8_t>(text[i])]; }

char Lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; }

bool IsNewline(char c) { return c == '\r' || c == '\n'; }

// End of the run of class `cls` starting at `i`, or 0 when a non-ASCII character follows it
// (it might belong to the run). At most `limit` characters.
size_t RunEnd(std::string_view text, size_t i, Cls cls, size_t limit = SIZE_MAX) {
  size_t j = i;
  while (j < text.size() && j - i < limit) {
    const Cls c = At(text, j);
    if (c == cls) {
      ++j;
    } else if (c == Cls::kNonAscii) {
      return 0;
    } else {
      break;
    }
  }
  return j;
}

// 's 't 're 've 'm 'll 'd at text[pos] == '\''. Returns the length, 0 for none, or SIZE_MAX when
// a non-ASCII character follows (under (?i), 'ſ' matches 's').
size_t Contraction(std::string_view text, size_t pos, bool ignore_case) {
  if (pos + 1 >= text.size()) return 0;
  char c1 = text[pos + 1];
  if (At(text, pos + 1) == Cls::kNonAscii) return ignore_case ? SIZE_MAX : 0;
  if (ignore_case) c1 = Lower(c1);
  if (c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd') return 2;
  if (pos + 2 >= text.size()) return 0;
  char c2 = text[pos + 2];
  if (ignore_case) c2 = Lower(c2);
  if ((c1 == 'r' && c2 == 'e') || (c1 == 'v' && c2 == 'e') || (c1 == 'l' && c2 == 'l')) return 3;
  return 0;
}

// The white-space alternatives shared by all three patterns, at a run of ASCII white space:
// \s*[\r\n]+ (when `newline_run`), then \s+(?!\S), then \s+.
size_t WhiteSpace(std::string_view text, size_t pos, bool newline_run) {
  const size_t end = RunEnd(text, pos, Cls::kSpace);
  if (end == 0) return 0;
  if (newline_run) {
    // \s* backtracks to the last newline of the run, which [\r\n]+ then takes.
    for (size_t j = end; j > pos; --j) {
      if (IsNewline(text[j - 1])) return j - pos;
    }
  }
  if (end == text.size()) return end - pos;  // (?!\S) holds at the end
  if (end - pos >= 2) return end - 1 - pos;  // leave the last space to the next piece
  return 1;
}

size_t MatchGpt2(std::string_view text, size_t pos) {
  const Cls cls = At(text, pos);
  if (cls == Cls::kNonAscii) return 0;
  if (text[pos] == '\'') {
    if (const size_t n = Contraction(text, pos, /*ignore_case=*/false); n > 0) return n;
  }
  // ' ?\p{L}+', ' ?\p{N}+', ' ?[^\s\p{L}\p{N}]+': an optional space, then a run of one class.
  size_t start = pos;
  if (text[pos] == ' ' && pos + 1 < text.size()) {
    const Cls next = At(text, pos + 1);
    if (next == Cls::kNonAscii) return 0;
    if (next != Cls::kSpace) start = pos + 1;
  }
  const Cls run = At(text, start);
  if (run == Cls::kLetter || run == Cls::kDigit || run == Cls::kOther) {
    const size_t end = RunEnd(text, start, run);
    return end == 0 ? 0 : end - pos;
  }
  return WhiteSpace(text, pos, /*newline_run=*/false);
}

// Llama 3 (max_digits 3) and Qwen2 (max_digits 1).
size_t MatchLlama3Like(std::string_view text, size_t pos, size_t max_digits) {
  const Cls cls = At(text, pos);
  if (cls == Cls::kNonAscii) return 0;
  if (text[pos] == '\'') {
    const size_t n = Contraction(text, pos, /*ignore_case=*/true);
    if (n == SIZE_MAX) return 0;
    if (n > 0) return n;
  }
  // [^\r\n\p{L}\p{N}]?\p{L}+
  if (cls == Cls::kLetter) {
    const size_t end = RunEnd(text, pos, Cls::kLetter);
    return end == 0 ? 0 : end - pos;
  }
  if ((cls == Cls::kOther || cls == Cls::kSpace) && !IsNewline(text[pos]) &&
      pos + 1 < text.size()) {
    const Cls next = At(text, pos + 1);
    if (next == Cls::kNonAscii) return 0;
    if (next == Cls::kLetter) {
      const size_t end = RunEnd(text, pos + 1, Cls::kLetter);
      return end == 0 ? 0 : end - pos;
    }
  }
  // \p{N}{1,3} (Qwen2: \p{N})
  if (cls == Cls::kDigit) {
    const size_t end = RunEnd(text, pos, Cls::kDigit, max_digits);
    return end == 0 ? 0 : end - pos;
  }
  // ' ?[^\s\p{L}\p{N}]+[\r\n]*'
  size_t start = pos;
  if (text[pos] == ' ' && pos + 1 < text.size() && At(text, pos + 1) == Cls::kOther)
    start = pos + 1;
  if (At(text, start) == Cls::kOther) {
    size_t end = RunEnd(text, start, Cls::kOther);
    if (end == 0) return 0;
    while (end < text.size() && IsNewline(text[end])) ++end;
    return end - pos;
  }
  return WhiteSpace(text, pos, /*newline_run=*/true);
}

size_t MatchLlama3(std::string_view text, size_t pos) { return MatchLlama3Like(text, pos, 3); }
size_t MatchQwen2(std::string_view text, size_t pos) { return MatchLlama3Like(text, pos, 1); }

}  // namespace

std::string_view KnownPatternName(std::string_view pattern) {
  if (pattern == kGpt2Pattern) return "gpt2";
  if (pattern == kLlama3Pattern) return "llama3";
  if (pattern == kQwen2Pattern) return "qwen2";
  return "";
}

AsciiMatcher AsciiMatcherFor(std::string_view pattern) {
  if (pattern == kGpt2Pattern) return MatchGpt2;
  if (pattern == kLlama3Pattern) return MatchLlama3;
  if (pattern == kQwen2Pattern) return MatchQwen2;
  return nullptr;
}

}  // namespace kite::tok
