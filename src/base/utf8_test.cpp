#include "base/utf8.h"

#include <gtest/gtest.h>

namespace kite {
namespace {

TEST(Utf8, DecodesEachSequenceLength) {
  const std::string text = "a\xc3\xa9\xe4\xb8\xad\xf0\x9f\x98\x80";  // a é 中 😀
  size_t pos = 0, length = 0;
  std::vector<char32_t> cps;
  while (pos < text.size()) {
    cps.push_back(DecodeUtf8(text, pos, &length));
    pos += length;
  }
  EXPECT_EQ(cps, (std::vector<char32_t>{U'a', 0xe9, 0x4e2d, 0x1f600}));
}

TEST(Utf8, RejectsOverlongSurrogateAndTruncated) {
  EXPECT_FALSE(IsValidUtf8("\xc0\xaf"));          // overlong '/'
  EXPECT_FALSE(IsValidUtf8("\xed\xa0\x80"));      // U+D800
  EXPECT_FALSE(IsValidUtf8("\xf4\x90\x80\x80"));  // past U+10FFFF
  EXPECT_FALSE(IsValidUtf8("\xe4\xb8"));          // truncated
  EXPECT_TRUE(IsValidUtf8("\xf4\x8f\xbf\xbf"));   // U+10FFFF
}

TEST(Utf8, IncompleteSuffixHoldsOnlyUnfinishedSequences) {
  EXPECT_EQ(IncompleteUtf8Suffix("ab\xe4\xb8"), 2u);
  EXPECT_EQ(IncompleteUtf8Suffix("ab\xe4\xb8\xad"), 0u);
  EXPECT_EQ(IncompleteUtf8Suffix("\xf0\x9f\x98"), 3u);
  EXPECT_EQ(IncompleteUtf8Suffix("abc"), 0u);
}

TEST(Utf8, AppendRoundTrips) {
  std::string out;
  for (char32_t cp : {U'x', char32_t{0x7ff}, char32_t{0xffff}, char32_t{0x10ffff}}) AppendUtf8(cp, &out);
  size_t pos = 0, length = 0;
  EXPECT_EQ(DecodeUtf8(out, pos, &length), U'x');
  pos += length;
  EXPECT_EQ(DecodeUtf8(out, pos, &length), char32_t{0x7ff});
  pos += length;
  EXPECT_EQ(DecodeUtf8(out, pos, &length), char32_t{0xffff});
  pos += length;
  EXPECT_EQ(DecodeUtf8(out, pos, &length), char32_t{0x10ffff});
}

}  // namespace
}  // namespace kite
