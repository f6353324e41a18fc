// Pre-tokenizer regexes: White_Space semantics for \s, tiling, and the ASCII matchers against
// plain PCRE2 on every short string over an alphabet of awkward characters.
#include "tokenizer/regex.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tokenizer/known_patterns.h"

namespace kite::tok {
namespace {

std::vector<std::string> Split(const Regex& regex, std::string_view text) {
  std::vector<std::string_view> pieces;
  EXPECT_TRUE(regex.Split(text, &pieces).has_value());
  return {pieces.begin(), pieces.end()};
}

TEST(Regex, WhiteSpaceFollowsTheUnicodeProperty) {
  const Regex space = Regex::Compile(R"(\s)", "test").value();
  const auto is_space = [&](const std::string& c) {
    const auto pieces = Split(space, "a" + c + "a");
    return pieces.size() == 3 && pieces[1] == c;
  };
  EXPECT_TRUE(is_space(" "));
  EXPECT_TRUE(is_space("\x0b"));           // vertical tab
  EXPECT_TRUE(is_space("\xc2\x85"));       // U+0085 NEXT LINE: White_Space
  EXPECT_TRUE(is_space("\xe3\x80\x80"));   // U+3000 IDEOGRAPHIC SPACE
  EXPECT_FALSE(is_space("\xef\xbb\xbf"));  // U+FEFF: not White_Space (JavaScript says yes)
  EXPECT_FALSE(is_space("\xe1\xa0\x8e"));  // U+180E: not White_Space (PCRE2 says yes)
  EXPECT_FALSE(is_space("\x1c"));          // file separator: Python's isspace says yes
}

TEST(Regex, TranslatesClassesInsideAndOutsideBrackets) {
  EXPECT_EQ(TranslateWhitespaceClasses("a]").value(), "a]");
  const std::string inside = TranslateWhitespaceClasses(R"([^\s\p{L}])").value();
  EXPECT_EQ(inside.find("\\s"), std::string::npos);
  EXPECT_TRUE(inside.starts_with("[^\\t-\\r"));
  EXPECT_FALSE(TranslateWhitespaceClasses(R"([\S])").has_value());
  // An escaped backslash before 's' is a literal backslash and a literal 's'.
  EXPECT_EQ(TranslateWhitespaceClasses(R"(\\s)").value(), R"(\\s)");
}

TEST(Regex, PiecesTileTheTextIncludingGaps) {
  const Regex digits = Regex::Compile(R"(\d+)", "test").value();
  EXPECT_EQ(Split(digits, "ab12cd345"), (std::vector<std::string>{"ab", "12", "cd", "345"}));
  EXPECT_EQ(Split(digits, ""), std::vector<std::string>{});
}

TEST(Regex, CompileErrorNamesThePattern) {
  const auto bad = Regex::Compile("(unclosed", "tokenizer.json");
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message.find("tokenizer.json: regex '(unclosed' does not compile"),
            std::string::npos);
}

TEST(KnownPatterns, Llama3SplitsAsTheReferenceDoes) {
  const Regex regex = Regex::Compile(kLlama3Pattern, "test").value();
  EXPECT_EQ(Split(regex, "Hello world  it's 12345!!\n\n  x"),
            (std::vector<std::string>{"Hello", " world", " ", " it", "'s", " ", "123", "45",
                                      "!!\n\n", " ", " x"}));
  EXPECT_EQ(Split(regex, "(hello)\tWORLD'S"),
            (std::vector<std::string>{"(hello", ")", "\tWORLD", "'S"}));
}

// Calls check(text) for every string of `min_length`..`max_length` symbols of `alphabet`.
template <typename Check>
void ForEachString(const std::vector<std::string>& alphabet, int min_length, int max_length,
                   Check check) {
  for (int length = min_length; length <= max_length; ++length) {
    std::vector<size_t> index(length, 0);
    for (;;) {
      std::string text;
      for (size_t i : index) text += alphabet[i];
      check(text);
      int pos = length - 1;
      while (pos >= 0 && ++index[pos] == alphabet.size()) index[pos--] = 0;
      if (pos < 0) break;
    }
  }
}

// Short strings over alphabets chosen to hit each branch of the ASCII matchers and their
// hand-offs to PCRE2: letters (the contraction letters in both cases), digits, both newlines,
// other white space, punctuation, and non-ASCII letters, digits, spaces and symbols (U+017F
// 'ſ' matches 's' under (?i)). The fuzz target checks longer inputs.
TEST(KnownPatterns, AsciiMatchersAgreeWithPcre2) {
  const std::vector<std::string> wide = {
      "a", "s", "S", "l", "e", "1", " ", "\n", "\r", "\t", "'", "!", "\xc5\xbf" /*ſ*/,
      "\xc3\xa9" /*é*/, "\xd9\xa3" /*Arabic-Indic 3*/, "\xe3\x80\x80" /*U+3000*/,
      "\xe2\x80\xa6" /*…*/};
  const std::vector<std::string> narrow = {"a", "1", " ", "\n", "!", "\xc3\xa9"};
  for (const std::string_view pattern : {kGpt2Pattern, kLlama3Pattern, kQwen2Pattern}) {
    const Regex fast = Regex::Compile(pattern, "fast").value();
    const Regex pcre2 = Regex::Compile(pattern, "pcre2", /*pcre2_only=*/true).value();
    size_t checked = 0;
    const auto check = [&](const std::string& text) {
      ASSERT_EQ(Split(fast, text), Split(pcre2, text))
          << KnownPatternName(pattern) << " on \"" << text << "\"";
      ++checked;
    };
    ForEachString(wide, 1, 3, check);
    ForEachString(narrow, 4, 5, check);
    EXPECT_EQ(checked, 17u + 17 * 17 + 17 * 17 * 17 + 6 * 6 * 6 * 6 + 6 * 6 * 6 * 6 * 6);
  }
}

}  // namespace
}  // namespace kite::tok
