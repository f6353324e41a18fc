#include "chat/jinja/lexer.h"

#include <gtest/gtest.h>

namespace kite::jinja {
namespace {

std::vector<TokenType> Types(const std::vector<Token>& tokens) {
  std::vector<TokenType> types;
  for (const Token& token : tokens) types.push_back(token.type);
  return types;
}

TEST(Lexer, SplitsTextAndTags) {
  auto tokens = Tokenize("Hi {{ name | upper }}!{% if a >= -1.5 %}x{% endif %}");
  ASSERT_TRUE(tokens.has_value()) << tokens.error().message;
  using T = TokenType;
  EXPECT_EQ(Types(*tokens),
            (std::vector<T>{T::kText, T::kOpenExpression, T::kIdentifier, T::kPipe, T::kIdentifier,
                            T::kCloseExpression, T::kText, T::kOpenStatement, T::kIdentifier,
                            T::kIdentifier, T::kComparison, T::kNumber, T::kCloseStatement,
                            T::kText, T::kOpenStatement, T::kIdentifier, T::kCloseStatement}));
  EXPECT_EQ((*tokens)[0].value, "Hi ");
  EXPECT_EQ((*tokens)[11].value, "-1.5");  // a sign after an operator belongs to the number
  EXPECT_EQ((*tokens)[2].offset, 6u);
}

TEST(Lexer, SignAfterOperandIsBinary) {
  auto tokens = Tokenize("{{ a -1 }}{{ -x }}");
  ASSERT_TRUE(tokens.has_value());
  EXPECT_EQ((*tokens)[2].type, TokenType::kAdditive);
  EXPECT_EQ((*tokens)[3].value, "1");
  EXPECT_EQ((*tokens)[6].type, TokenType::kUnary);
}

TEST(Lexer, UnescapesStrings) {
  auto tokens = Tokenize(R"({{ 'a\'b\n\x41\u00e9\ud83d\ude80' }})");
  ASSERT_TRUE(tokens.has_value()) << tokens.error().message;
  EXPECT_EQ((*tokens)[1].type, TokenType::kString);
  EXPECT_EQ((*tokens)[1].value, "a'b\nAé🚀");
}

TEST(Lexer, WhitespaceControlAndBlockTrimming) {
  // `-` strips whitespace on its side; trim_blocks drops the newline after a block tag;
  // lstrip_blocks drops the indentation before one.
  auto tokens = Tokenize("a \n  {%- if x -%}  \n b\n  {% endif %}\nc");
  ASSERT_TRUE(tokens.has_value());
  EXPECT_EQ((*tokens)[0].value, "a");
  EXPECT_EQ((*tokens)[5].value, "b\n");
  EXPECT_EQ((*tokens).back().value, "c");
}

TEST(Lexer, CommentsAndGenerationMarkersVanish) {
  auto tokens = Tokenize("a {#- note -#} b{% generation %}c{% endgeneration %}");
  ASSERT_TRUE(tokens.has_value());
  std::string text;
  for (const Token& token : *tokens) {
    if (token.type == TokenType::kText) text += token.value;
  }
  EXPECT_EQ(text, "abc");
}

TEST(Lexer, ErrorsNameLineAndColumn) {
  auto bad = Tokenize("ok\n  {{ 1 $ 2 }}");
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message.find("line 2, column 8"), std::string::npos) << bad.error().message;
  for (const char* source :
       {"{{ 'abc }}", "{# open", "{{ x ", "{{ '\\q' }}", "{{ '\\x4' }}", "{{ 12"}) {
    EXPECT_FALSE(Tokenize(source).has_value()) << source;
  }
}

TEST(Lexer, DescribesPositionsInCodePoints) {
  EXPECT_EQ(DescribePosition("ab\ncé d", 7), "line 2, column 4");
  EXPECT_EQ(DescribePosition("", 0), "line 1, column 1");
}

}  // namespace
}  // namespace kite::jinja
