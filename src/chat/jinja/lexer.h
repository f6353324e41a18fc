// Template text → tokens, following @huggingface/jinja's lexer: the source is first
// preprocessed as Hugging Face renders chat templates (trim_blocks and lstrip_blocks on, one
// trailing newline dropped, the `{% generation %}` markers removed), then split into text and
// the tokens inside `{{ }}` / `{% %}` (`{# #}` comments are dropped, `-` strips whitespace).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace kite::jinja {

enum class TokenType : uint8_t {
  kText,
  kNumber,      // digits, optionally a fraction; a sign is part of it after an operator
  kString,      // value is the unescaped contents
  kIdentifier,  // also keywords (if, for, in, not, ...), which the parser tells apart
  kEquals,
  kOpenParen,
  kCloseParen,
  kOpenStatement,
  kCloseStatement,
  kOpenExpression,
  kCloseExpression,
  kOpenBracket,
  kCloseBracket,
  kOpenBrace,
  kCloseBrace,
  kComma,
  kDot,
  kColon,
  kPipe,
  kAdditive,        // + - ~
  kMultiplicative,  // * / // %
  kPower,           // **
  kComparison,      // < > <= >= == !=
  kUnary,           // a sign not followed by a number
  kComment,         // {# ... #}: kept only because text may follow it
};

struct Token {
  TokenType type;
  std::string value;
  uint32_t offset;  // byte offset of the token in the original source
};

// Line and column (1-based, columns in code points) of a byte offset, for error messages.
std::string DescribePosition(std::string_view source, uint32_t offset);

// Tokenizes `source` (valid UTF-8). Errors name the line and column.
Result<std::vector<Token>> Tokenize(std::string_view source);

}  // namespace kite::jinja
