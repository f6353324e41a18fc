#include "tokenizer/special_tokens.h"

#include <gtest/gtest.h>

namespace kite::tok {
namespace {

// "text" for raw segments, "#id" for special tokens.
std::vector<std::string> Split(const SpecialTokenSplitter& splitter, std::string_view text) {
  std::vector<Segment> segments;
  splitter.Split(text, &segments);
  std::vector<std::string> out;
  for (const Segment& s : segments) {
    out.push_back(s.id >= 0 ? std::string(1, '#').append(std::to_string(s.id))
                            : std::string(s.text));
  }
  return out;
}

TEST(PrefixMatcher, FindsTheLongestPrefix) {
  PrefixMatcher matcher;
  matcher.Add("<s>", 1);
  matcher.Add("<s><s>", 2);
  matcher.Add("<|im_start|>", 3);
  int32_t id = -1;
  EXPECT_EQ(matcher.LongestMatch("<s><s>x", &id), 6u);
  EXPECT_EQ(id, 2);
  EXPECT_EQ(matcher.LongestMatch("<s><x", &id), 3u);
  EXPECT_EQ(id, 1);
  EXPECT_EQ(matcher.LongestMatch("<|im_sta", &id), 0u);
  EXPECT_EQ(matcher.CommonFirstByte(), '<');
  matcher.Add("[PAD]", 4);
  EXPECT_EQ(matcher.CommonFirstByte(), -1);
}

TEST(SpecialTokenSplitter, MatchesLeftmostThenLongest) {
  SpecialTokenSplitter splitter;
  splitter.Add({"<s>", 1});
  splitter.Add({"</s>", 2});
  splitter.Add({"ab", 10});
  splitter.Add({"bcd", 11});
  EXPECT_EQ(Split(splitter, "x<s>y</s>"), (std::vector<std::string>{"x", "#1", "y", "#2"}));
  EXPECT_EQ(Split(splitter, "<s><s>"), (std::vector<std::string>{"#1", "#1"}));
  // "ab" starts first, so it wins over the longer "bcd".
  EXPECT_EQ(Split(splitter, "abcd"), (std::vector<std::string>{"#10", "cd"}));
  EXPECT_EQ(Split(splitter, "< s>"), (std::vector<std::string>{"< s>"}));
  EXPECT_EQ(Split(splitter, ""), std::vector<std::string>{});
}

TEST(SpecialTokenSplitter, StripFlagsSwallowWhiteSpace) {
  SpecialTokenSplitter splitter;
  splitter.Add({"<mask>", 5, /*lstrip=*/true, /*rstrip=*/false});
  splitter.Add({"<end>", 6, /*lstrip=*/false, /*rstrip=*/true});
  EXPECT_EQ(Split(splitter, "a  <mask> b"), (std::vector<std::string>{"a", "#5", " b"}));
  EXPECT_EQ(Split(splitter, "a <end> \n b"), (std::vector<std::string>{"a ", "#6", "b"}));
}

TEST(SpecialTokenSplitter, SingleWordTokensNeedWordBoundaries) {
  SpecialTokenSplitter splitter;
  splitter.Add({"cat", 7, false, false, /*single_word=*/true});
  EXPECT_EQ(Split(splitter, "a cat."), (std::vector<std::string>{"a ", "#7", "."}));
  EXPECT_EQ(Split(splitter, "concatenate"), (std::vector<std::string>{"concatenate"}));
  EXPECT_EQ(Split(splitter, "cats"), (std::vector<std::string>{"cats"}));
}

}  // namespace
}  // namespace kite::tok
