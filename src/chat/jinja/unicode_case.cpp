// JavaScript's toUpperCase / toLowerCase for the scripts chat templates meet. Code points
// outside the covered blocks are left as they are (the reference would map a few of them).
#include <algorithm>
#include <cstdint>
#include <iterator>
#include <string>
#include <string_view>

#include "base/utf8.h"
#include "chat/jinja/js_string.h"

namespace kite::jinja {
namespace {

// A block where upper and lower case alternate: `upper_parity` is the parity of the upper-case
// code point of each pair.
struct AlternatingBlock {
  char32_t first, last;
  int upper_parity;
};

constexpr AlternatingBlock kAlternating[] = {
    {0x0100, 0x012f, 0}, {0x0132, 0x0137, 0}, {0x0139, 0x0148, 1}, {0x014a, 0x0177, 0},
    {0x0179, 0x017e, 1}, {0x01cd, 0x01dc, 1}, {0x01de, 0x01ef, 0}, {0x01f4, 0x01f5, 0},
    {0x01f8, 0x021f, 0}, {0x0222, 0x0233, 0}, {0x0460, 0x0481, 0}, {0x048a, 0x04bf, 0},
    {0x04c1, 0x04ce, 1}, {0x04d0, 0x052f, 0}, {0x1e00, 0x1e95, 0}, {0x1ea0, 0x1eff, 0},
};

// Upper-case letter → lower-case letter pairs at a fixed distance.
struct OffsetBlock {
  char32_t upper_first, upper_last;
  int32_t to_lower;
};

constexpr OffsetBlock kOffsets[] = {
    {'A', 'Z', 32},       {0x00c0, 0x00d6, 32}, {0x00d8, 0x00de, 32}, {0x0391, 0x03a1, 32},
    {0x03a3, 0x03ab, 32}, {0x0410, 0x042f, 32}, {0x0400, 0x040f, 80}, {0x0531, 0x0556, 48},
    {0xff21, 0xff3a, 32}, {0x0388, 0x038a, 37},
};

// Pairs that fit no block.
struct Pair {
  char32_t upper, lower;
};

constexpr Pair kPairs[] = {
    {0x0178, 0x00ff}, {0x0386, 0x03ac}, {0x038c, 0x03cc}, {0x038e, 0x03cd},
    {0x038f, 0x03ce}, {0x04c0, 0x04cf}, {0x1e9e, 0x00df}, {0x018e, 0x01dd},
    {0x01f6, 0x0195}, {0x01f7, 0x01bf}, {0x0220, 0x019e},
};

// Latin digraphs have three forms: DŽ, Dž (title case), dž.
struct Digraph {
  char32_t upper, title, lower;
};

constexpr Digraph kDigraphs[] = {
    {0x01c4, 0x01c5, 0x01c6},
    {0x01c7, 0x01c8, 0x01c9},
    {0x01ca, 0x01cb, 0x01cc},
    {0x01f1, 0x01f2, 0x01f3},
};

bool IsUpperLetter(char32_t cp, char32_t* lower) {
  for (const auto& digraph : kDigraphs) {
    if (cp == digraph.upper || cp == digraph.title) {
      *lower = digraph.lower;
      return true;
    }
  }
  for (const auto& block : kAlternating) {
    if (cp >= block.first && cp <= block.last && static_cast<int>(cp % 2) == block.upper_parity) {
      *lower = cp + 1;
      return true;
    }
  }
  for (const auto& block : kOffsets) {
    if (cp >= block.upper_first && cp <= block.upper_last) {
      *lower = cp + block.to_lower;
      return true;
    }
  }
  for (const auto& pair : kPairs) {
    if (cp == pair.upper) {
      *lower = pair.lower;
      return true;
    }
  }
  return false;
}

bool IsLowerLetter(char32_t cp, char32_t* upper) {
  for (const auto& digraph : kDigraphs) {
    if (cp == digraph.lower || cp == digraph.title) {
      *upper = digraph.upper;
      return true;
    }
  }
  for (const auto& block : kAlternating) {
    if (cp > block.first && cp <= block.last && static_cast<int>(cp % 2) != block.upper_parity) {
      *upper = cp - 1;
      return true;
    }
  }
  for (const auto& block : kOffsets) {
    if (cp >= block.upper_first + block.to_lower && cp <= block.upper_last + block.to_lower) {
      *upper = cp - block.to_lower;
      return true;
    }
  }
  for (const auto& pair : kPairs) {
    if (cp == pair.lower && pair.upper != 0x1e9e) {  // ß upper-cases to "SS", below
      *upper = pair.upper;
      return true;
    }
  }
  switch (cp) {
    case 0x00b5:
      *upper = 0x039c;
      return true;  // micro sign → Greek capital mu
    case 0x0131:
      *upper = 'I';
      return true;  // dotless i
    case 0x017f:
      *upper = 'S';
      return true;  // long s
    case 0x03c2:
      *upper = 0x03a3;
      return true;  // final sigma
    case 0x1e9b:
      *upper = 0x1e60;
      return true;  // long s with dot above
    default:
      return false;
  }
}

// Lower-case letters whose upper case is more than one code point (SpecialCasing.txt).
struct ExpandingUpper {
  char32_t lower;
  const char* upper;
};

constexpr ExpandingUpper kExpandingUpper[] = {
    {0x00df, "SS"},
    {0x0149, "\u02bcN"},
    {0x01f0, "J\u030c"},
    {0x0390, "\u0399\u0308\u0301"},
    {0x03b0, "\u03a5\u0308\u0301"},
    {0x0587, "\u0535\u0552"},
    {0x1e96, "H\u0331"},
    {0x1e97, "T\u0308"},
    {0x1e98, "W\u030a"},
    {0x1e99, "Y\u030a"},
    {0x1e9a, "A\u02be"},
};

bool IsCased(char32_t cp) {
  char32_t other;
  return IsUpperLetter(cp, &other) || IsLowerLetter(cp, &other) || cp == 0x00df;
}

}  // namespace

std::string JsToUpper(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    size_t length;
    const char32_t cp = DecodeUtf8(text, pos, &length);
    pos += length;
    char32_t upper;
    const auto expanding = std::find_if(std::begin(kExpandingUpper), std::end(kExpandingUpper),
                                        [&](const ExpandingUpper& e) { return e.lower == cp; });
    if (expanding != std::end(kExpandingUpper)) {
      out += expanding->upper;
    } else if (IsLowerLetter(cp, &upper)) {
      AppendUtf8(upper, &out);
    } else {
      AppendUtf8(cp, &out);
    }
  }
  return out;
}

std::string JsToLower(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  char32_t previous = 0;
  for (size_t pos = 0; pos < text.size();) {
    size_t length;
    const char32_t cp = DecodeUtf8(text, pos, &length);
    pos += length;
    char32_t lower;
    if (cp == 0x03a3) {
      // Final sigma: a capital sigma after a cased letter and not before one.
      char32_t next = 0;
      if (pos < text.size()) {
        size_t next_length;
        next = DecodeUtf8(text, pos, &next_length);
      }
      AppendUtf8(IsCased(previous) && !IsCased(next) ? 0x03c2 : 0x03c3, &out);
    } else if (cp == 0x0130) {  // İ → i + combining dot above
      out += 'i';
      AppendUtf8(0x0307, &out);
    } else if (IsUpperLetter(cp, &lower)) {
      AppendUtf8(lower, &out);
    } else {
      AppendUtf8(cp, &out);
    }
    previous = cp;
  }
  return out;
}

}  // namespace kite::jinja
