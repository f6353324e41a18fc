#include "chat/jinja/lexer.h"

#include <array>
#include <utility>

#include "base/hex.h"
#include "base/utf8.h"
#include "chat/jinja/js_string.h"

namespace kite::jinja {
namespace {

// Text with, for every byte, the offset in the original source it came from (plus one entry
// for the end), so errors after preprocessing still point into the template as written.
struct Mapped {
  std::string text;
  std::vector<uint32_t> origin;

  void Append(const Mapped& from, size_t begin, size_t end) {
    text.append(from.text, begin, end - begin);
    origin.insert(origin.end(), from.origin.begin() + begin, from.origin.begin() + end);
  }
  void Finish(uint32_t end_offset) { origin.push_back(end_offset); }
  void Truncate(size_t size) {
    text.resize(size);
    origin.resize(size);
  }
};

bool IsLineTerminatorAt(std::string_view s, size_t i, size_t* length) {
  *length = 1;
  if (s[i] == '\n' || s[i] == '\r') return true;
  if (s.substr(i, 3) == "\u2028" || s.substr(i, 3) == "\u2029") {
    *length = 3;
    return true;
  }
  return false;
}

bool WhitespaceAt(std::string_view s, size_t i, size_t* length) {
  return i < s.size() && IsJsWhitespace(DecodeUtf8(s, i, length));
}

size_t SkipWhitespace(std::string_view s, size_t i) {
  size_t length;
  while (WhitespaceAt(s, i, &length)) i += length;
  return i;
}

// lstrip_blocks as the reference does it: spaces and tabs between a line start and `{%`, `{#`
// or `{-` are removed (a line starts after \n, \r, U+2028 or U+2029).
Mapped StripBlockIndent(const Mapped& in) {
  Mapped out;
  const std::string_view s = in.text;
  size_t i = 0;
  bool line_start = true;
  while (i < s.size()) {
    if (line_start) {
      size_t j = i;
      while (j < s.size() && (s[j] == ' ' || s[j] == '\t')) ++j;
      if (j + 1 < s.size() && s[j] == '{' &&
          (s[j + 1] == '#' || s[j + 1] == '%' || s[j + 1] == '-')) {
        i = j;
      }
    }
    size_t length;
    line_start = IsLineTerminatorAt(s, i, &length);
    out.Append(in, i, i + length);
    i += length;
  }
  out.Finish(in.origin.back());
  return out;
}

// trim_blocks: the newline right after `%}`, `#}` or `-}` is removed.
Mapped TrimBlockNewlines(const Mapped& in) {
  Mapped out;
  const std::string_view s = in.text;
  for (size_t i = 0; i < s.size(); ++i) {
    const bool after_tag =
        i >= 2 && s[i - 1] == '}' && (s[i - 2] == '#' || s[i - 2] == '%' || s[i - 2] == '-');
    if (s[i] == '\n' && after_tag) continue;
    out.Append(in, i, i + 1);
  }
  out.Finish(in.origin.back());
  return out;
}

// Matches `{%-? (end)?generation -?%}` at `i`; returns its end and the two strip flags.
bool MatchGenerationTag(std::string_view s, size_t i, size_t* end, bool* strip_before,
                        bool* strip_after) {
  if (s.substr(i, 2) != "{%") return false;
  size_t j = i + 2;
  *strip_before = j < s.size() && s[j] == '-';
  if (*strip_before) ++j;
  j = SkipWhitespace(s, j);
  if (s.substr(j, 3) == "end") j += 3;
  if (s.substr(j, 10) != "generation") return false;
  j = SkipWhitespace(s, j + 10);
  *strip_after = j < s.size() && s[j] == '-';
  if (*strip_after) ++j;
  if (s.substr(j, 2) != "%}") return false;
  *end = j + 2;
  return true;
}

// Removes the transformers-specific `{% generation %}` / `{% endgeneration %}` markers, and with
// `-` the whitespace run on that side of them.
Mapped RemoveGenerationTags(const Mapped& in) {
  Mapped out;
  const std::string_view s = in.text;
  size_t last_match_end = 0;  // in `out`: the whitespace before a tag cannot reach behind it
  for (size_t i = 0; i < s.size();) {
    size_t end;
    bool strip_before, strip_after;
    if (s[i] != '{' || !MatchGenerationTag(s, i, &end, &strip_before, &strip_after)) {
      out.Append(in, i, i + 1);
      ++i;
      continue;
    }
    if (strip_before) {
      size_t keep = out.text.size();
      while (keep > last_match_end) {
        size_t lead = keep - 1;
        while (lead > last_match_end && (static_cast<uint8_t>(out.text[lead]) & 0xc0) == 0x80)
          --lead;
        size_t length;
        if (!WhitespaceAt(out.text, lead, &length)) break;
        keep = lead;
      }
      out.Truncate(keep);
    }
    const size_t after = SkipWhitespace(s, end);
    if (!strip_after) out.Append(in, end, after);
    i = after;
    last_match_end = out.text.size();
  }
  out.Finish(in.origin.back());
  return out;
}

Mapped Preprocess(std::string_view source) {
  Mapped mapped;
  mapped.text = std::string(source);
  for (uint32_t i = 0; i <= source.size(); ++i) mapped.origin.push_back(i);
  if (!mapped.text.empty() && mapped.text.back() == '\n') {
    mapped.text.pop_back();
    mapped.origin.erase(mapped.origin.end() - 2);
  }
  return RemoveGenerationTags(TrimBlockNewlines(StripBlockIndent(mapped)));
}

constexpr std::array<std::pair<std::string_view, TokenType>, 29> kOperators = {
    {{"{%", TokenType::kOpenStatement},  {"%}", TokenType::kCloseStatement},
     {"{{", TokenType::kOpenExpression}, {"}}", TokenType::kCloseExpression},
     {"(", TokenType::kOpenParen},       {")", TokenType::kCloseParen},
     {"{", TokenType::kOpenBrace},       {"}", TokenType::kCloseBrace},
     {"[", TokenType::kOpenBracket},     {"]", TokenType::kCloseBracket},
     {",", TokenType::kComma},           {".", TokenType::kDot},
     {":", TokenType::kColon},           {"|", TokenType::kPipe},
     {"<=", TokenType::kComparison},     {">=", TokenType::kComparison},
     {"==", TokenType::kComparison},     {"!=", TokenType::kComparison},
     {"<", TokenType::kComparison},      {">", TokenType::kComparison},
     {"+", TokenType::kAdditive},        {"-", TokenType::kAdditive},
     {"~", TokenType::kAdditive},        {"**", TokenType::kPower},
     {"*", TokenType::kMultiplicative},  {"//", TokenType::kMultiplicative},
     {"/", TokenType::kMultiplicative},  {"%", TokenType::kMultiplicative},
     {"=", TokenType::kEquals}}};

bool IsWordChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}
bool IsDigitChar(char c) { return c >= '0' && c <= '9'; }

class Lexer {
 public:
  Lexer(std::string_view source, Mapped text) : source_(source), m_(std::move(text)), s_(m_.text) {}

  Result<std::vector<Token>> Run();

 private:
  std::unexpected<Error> Fail(size_t at, const std::string& what) const {
    return InvalidInput(DescribePosition(source_, m_.origin[std::min(at, s_.size())]) + ": " +
                        what);
  }
  void Push(TokenType type, std::string value, size_t at) {
    tokens_.push_back(Token{type, std::move(value), m_.origin[at]});
  }
  TokenType LastType() const { return tokens_.empty() ? TokenType::kText : tokens_.back().type; }
  // `{%-` and friends: trailing whitespace of the text before the tag goes.
  void StripTrailingWhitespace() {
    if (tokens_.empty() || tokens_.back().type != TokenType::kText) return;
    std::string& text = tokens_.back().value;
    text.resize(TrimJs(text, false, true).size());
    if (text.empty()) tokens_.pop_back();
  }
  // Consumes characters while `pred` holds; like the reference, running into the end of the
  // template after consuming anything is an error (the tag is unterminated).
  template <typename Pred>
  Status ConsumeWhile(Pred pred, std::string* out) {
    while (pos_ < s_.size() && pred(s_[pos_])) {
      if (out) out->push_back(s_[pos_]);
      if (++pos_ >= s_.size()) return Fail(pos_, "unexpected end of template inside a tag");
    }
    return Ok();
  }
  Status LexString(char quote, std::string* out);
  Status LexNumber(std::string* out);

  std::string_view source_;
  Mapped m_;
  std::string_view s_;
  size_t pos_ = 0;
  int curly_depth_ = 0;
  std::vector<Token> tokens_;
};

Status Lexer::LexString(char quote, std::string* out) {
  uint32_t pending_high = 0;  // a \uD8xx escape waiting for its low half
  const auto flush_high = [&] {
    if (pending_high != 0) AppendUtf8(0xfffd, out);
    pending_high = 0;
  };
  while (true) {
    if (pos_ >= s_.size()) return Fail(pos_, "unterminated string literal");
    const char c = s_[pos_];
    if (c == quote) break;
    if (c != '\\') {
      flush_high();
      out->push_back(c);
      if (++pos_ >= s_.size()) return Fail(pos_, "unterminated string literal");
      continue;
    }
    if (++pos_ >= s_.size()) return Fail(pos_, "unterminated string literal");
    const char escaped = s_[pos_++];
    if (escaped == 'x' || escaped == 'u') {
      const size_t digits = escaped == 'x' ? 2 : 4;
      uint32_t unit = 0;
      for (size_t k = 0; k < digits; ++k) {
        const int h = pos_ + k < s_.size() ? HexDigit(s_[pos_ + k]) : -1;
        if (h < 0) return Fail(pos_, std::string("invalid \\") + escaped + " escape");
        unit = unit * 16 + h;
      }
      pos_ += digits;
      if (unit >= 0xdc00 && unit <= 0xdfff && pending_high != 0) {
        AppendUtf8(0x10000 + ((pending_high - 0xd800) << 10) + (unit - 0xdc00), out);
        pending_high = 0;
      } else if (unit >= 0xd800 && unit <= 0xdbff) {
        flush_high();
        pending_high = unit;
      } else {
        flush_high();
        AppendUtf8(unit >= 0xd800 && unit <= 0xdfff ? 0xfffd : unit, out);
      }
      continue;
    }
    flush_high();
    switch (escaped) {
      case 'n':
        out->push_back('\n');
        break;
      case 't':
        out->push_back('\t');
        break;
      case 'r':
        out->push_back('\r');
        break;
      case 'b':
        out->push_back('\b');
        break;
      case 'f':
        out->push_back('\f');
        break;
      case 'v':
        out->push_back('\v');
        break;
      case '\'':
      case '"':
      case '\\':
        out->push_back(escaped);
        break;
      default:
        return Fail(pos_ - 1, std::string("unknown escape \\") + escaped);
    }
  }
  flush_high();
  ++pos_;  // closing quote
  return Ok();
}

Status Lexer::LexNumber(std::string* out) {
  KITE_RETURN_IF_ERROR(ConsumeWhile(IsDigitChar, out));
  // `x.0.1` reads as attribute 0 then 1, so no fraction right after a dot.
  const bool after_dot = !tokens_.empty() && tokens_.back().type == TokenType::kDot;
  if (!out->empty() && !after_dot && pos_ + 1 < s_.size() && s_[pos_] == '.' &&
      IsDigitChar(s_[pos_ + 1])) {
    ++pos_;
    out->push_back('.');
    KITE_RETURN_IF_ERROR(ConsumeWhile(IsDigitChar, out));
  }
  return Ok();
}

Result<std::vector<Token>> Lexer::Run() {
  while (pos_ < s_.size()) {
    const TokenType last = LastType();
    if (tokens_.empty() || last == TokenType::kCloseStatement ||
        last == TokenType::kCloseExpression || last == TokenType::kComment) {
      const size_t start = pos_;
      while (pos_ < s_.size() &&
             !(s_[pos_] == '{' && pos_ + 1 < s_.size() &&
               (s_[pos_ + 1] == '%' || s_[pos_ + 1] == '{' || s_[pos_ + 1] == '#'))) {
        ++pos_;
      }
      if (pos_ > start) {
        Push(TokenType::kText, std::string(s_.substr(start, pos_ - start)), start);
        continue;
      }
    }
    const std::string_view rest = s_.substr(pos_);
    if (rest.starts_with("{#")) {
      const size_t start = pos_;
      pos_ += 2;
      const bool strip_before = pos_ < s_.size() && s_[pos_] == '-';
      if (strip_before) ++pos_;
      const size_t close = s_.find("#}", pos_);
      if (close == std::string_view::npos) return Fail(start, "unterminated comment");
      const bool strip_after = close > pos_ && s_[close - 1] == '-';
      if (strip_before) StripTrailingWhitespace();
      Push(TokenType::kComment, "", start);
      pos_ = close + 2;
      if (strip_after) pos_ = SkipWhitespace(s_, pos_);
      continue;
    }
    if (rest.starts_with("{%-") || rest.starts_with("{{-")) {
      StripTrailingWhitespace();
      const bool statement = rest[1] == '%';
      Push(statement ? TokenType::kOpenStatement : TokenType::kOpenExpression,
           statement ? "{%" : "{{", pos_);
      if (!statement) curly_depth_ = 0;
      pos_ += 3;
      continue;
    }
    const size_t after_space = SkipWhitespace(s_, pos_);
    if (after_space > pos_ && after_space >= s_.size()) {
      return Fail(after_space, "unexpected end of template inside a tag");
    }
    pos_ = after_space;
    const std::string_view at = s_.substr(pos_);
    if (at.starts_with("-%}") || at.starts_with("-}}")) {
      const bool statement = at[1] == '%';
      Push(statement ? TokenType::kCloseStatement : TokenType::kCloseExpression,
           statement ? "%}" : "}}", pos_);
      pos_ = SkipWhitespace(s_, pos_ + 3);
      continue;
    }
    const char c = s_[pos_];
    if (c == '-' || c == '+') {
      const TokenType prev = LastType();
      const bool binary = prev == TokenType::kIdentifier || prev == TokenType::kNumber ||
                          prev == TokenType::kString || prev == TokenType::kCloseParen ||
                          prev == TokenType::kCloseBracket;
      if (!binary) {
        const size_t start = pos_++;
        std::string number;
        KITE_RETURN_IF_ERROR(LexNumber(&number));
        if (number.empty()) {
          Push(TokenType::kUnary, std::string(1, c), start);
        } else {
          Push(TokenType::kNumber, std::string(1, c) + number, start);
        }
        continue;
      }
    }
    bool matched = false;
    for (const auto& [text, type] : kOperators) {
      if (type == TokenType::kCloseExpression && curly_depth_ > 0) continue;
      if (!at.starts_with(text)) continue;
      Push(type, std::string(text), pos_);
      if (type == TokenType::kOpenExpression) curly_depth_ = 0;
      if (type == TokenType::kOpenBrace) ++curly_depth_;
      if (type == TokenType::kCloseBrace) --curly_depth_;
      pos_ += text.size();
      matched = true;
      break;
    }
    if (matched) continue;
    const size_t start = pos_;
    std::string value;
    if (c == '\'' || c == '"') {
      ++pos_;
      KITE_RETURN_IF_ERROR(LexString(c, &value));
      Push(TokenType::kString, std::move(value), start);
    } else if (IsDigitChar(c)) {
      KITE_RETURN_IF_ERROR(LexNumber(&value));
      Push(TokenType::kNumber, std::move(value), start);
    } else if (IsWordChar(c)) {
      KITE_RETURN_IF_ERROR(ConsumeWhile(IsWordChar, &value));
      Push(TokenType::kIdentifier, std::move(value), start);
    } else {
      size_t length;
      std::string shown;
      AppendUtf8(DecodeUtf8(s_, pos_, &length), &shown);
      return Fail(pos_, "unexpected character '" + shown + "'");
    }
  }
  return std::move(tokens_);
}

}  // namespace

std::string DescribePosition(std::string_view source, uint32_t offset) {
  size_t line = 1, column = 1;
  for (size_t i = 0; i < offset && i < source.size(); ++i) {
    if (source[i] == '\n') {
      ++line;
      column = 1;
    } else if ((static_cast<uint8_t>(source[i]) & 0xc0) != 0x80) {
      ++column;
    }
  }
  return "line " + std::to_string(line) + ", column " + std::to_string(column);
}

Result<std::vector<Token>> Tokenize(std::string_view source) {
  return Lexer(source, Preprocess(source)).Run();
}

}  // namespace kite::jinja
