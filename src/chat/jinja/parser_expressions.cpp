// Expressions, lowest precedence first: `x if c else y`, or, and, not, comparisons and `in`,
// + - ~, * / // %, **, `is` tests, `|` filters, unary signs, calls and members, literals.
#include <set>
#include <string>
#include <utility>

#include "chat/jinja/js_string.h"
#include "chat/jinja/parser_impl.h"

namespace kite::jinja::internal {

Result<NodePtr> Parser::Expression() {
  Guard guard(this);
  if (guard.too_deep()) return TooDeep();
  NodePtr value = KITE_TRY(Or());
  if (!IsIdentifier("if")) return value;
  const uint32_t offset = Offset();
  ++pos_;
  NodePtr test = KITE_TRY(Or());
  if (IsIdentifier("else")) {
    ++pos_;
    NodePtr node = Make(NodeKind::kTernary, offset);
    node->a = std::move(test);
    node->b = std::move(value);
    node->c = KITE_TRY(Expression());
    return Finish(std::move(node));
  }
  NodePtr node = Make(NodeKind::kSelect, offset);
  node->a = std::move(value);
  node->b = std::move(test);
  return Finish(std::move(node));
}

Result<NodePtr> Parser::Sequence(bool primary) {
  const uint32_t offset = Offset();
  NodePtr first = KITE_TRY(primary ? Primary() : Expression());
  if (!Is(TokenType::kComma)) return first;
  NodePtr tuple = Make(NodeKind::kTuple, offset);
  tuple->args.push_back(std::move(first));
  while (Is(TokenType::kComma)) {
    ++pos_;
    tuple->args.push_back(KITE_TRY(primary ? Primary() : Expression()));
  }
  return Finish(std::move(tuple));
}

Result<NodePtr> Parser::Or() {
  NodePtr left = KITE_TRY(And());
  while (IsIdentifier("or")) {
    NodePtr node = Make(NodeKind::kBinary, Offset());
    node->str = "or";
    ++pos_;
    node->a = std::move(left);
    node->b = KITE_TRY(And());
    left = KITE_TRY(Finish(std::move(node)));
  }
  return left;
}

Result<NodePtr> Parser::And() {
  NodePtr left = KITE_TRY(Not());
  while (IsIdentifier("and")) {
    NodePtr node = Make(NodeKind::kBinary, Offset());
    node->str = "and";
    ++pos_;
    node->a = std::move(left);
    node->b = KITE_TRY(Not());
    left = KITE_TRY(Finish(std::move(node)));
  }
  return left;
}

Result<NodePtr> Parser::Not() {
  Guard guard(this);
  if (guard.too_deep()) return TooDeep();
  NodePtr result;
  // As in the reference, `not a not b` keeps only the last negation.
  while (IsIdentifier("not")) {
    NodePtr node = Make(NodeKind::kUnary, Offset());
    node->str = "not";
    ++pos_;
    node->a = KITE_TRY(Not());
    result = KITE_TRY(Finish(std::move(node)));
  }
  if (result) return result;
  return Comparison();
}

Result<NodePtr> Parser::Comparison() {
  NodePtr left = KITE_TRY(Additive());
  while (true) {
    std::string op;
    const uint32_t offset = Offset();
    if (IsIdentifier("not") && IsIdentifier("in", 1)) {
      op = "not in";
      pos_ += 2;
    } else if (IsIdentifier("in") || Is(TokenType::kComparison)) {
      op = tokens_[pos_++].value;
    } else {
      return left;
    }
    NodePtr node = Make(NodeKind::kBinary, offset);
    node->str = op;
    node->a = std::move(left);
    node->b = KITE_TRY(Additive());
    left = KITE_TRY(Finish(std::move(node)));
  }
}

Result<NodePtr> Parser::Binary(TokenType type, Result<NodePtr> (Parser::*operand)()) {
  NodePtr left = KITE_TRY((this->*operand)());
  while (Is(type)) {
    NodePtr node = Make(NodeKind::kBinary, Offset());
    node->str = tokens_[pos_++].value;
    node->a = std::move(left);
    node->b = KITE_TRY((this->*operand)());
    left = KITE_TRY(Finish(std::move(node)));
  }
  return left;
}

Result<NodePtr> Parser::TestExpression() {
  NodePtr operand = KITE_TRY(FilterExpression());
  while (IsIdentifier("is")) {
    NodePtr node = Make(NodeKind::kTest, Offset());
    ++pos_;
    node->negated = IsIdentifier("not");
    if (node->negated) ++pos_;
    NodePtr test = KITE_TRY(Primary());
    if (test->kind != NodeKind::kIdentifier) return Fail("expected the name of a test after 'is'");
    node->str = test->str;
    node->a = std::move(operand);
    operand = KITE_TRY(Finish(std::move(node)));
  }
  return operand;
}

Result<NodePtr> Parser::FilterExpression() {
  NodePtr operand = KITE_TRY(UnarySign());
  while (Is(TokenType::kPipe)) {
    NodePtr node = Make(NodeKind::kFilter, Offset());
    ++pos_;
    NodePtr filter = KITE_TRY(Primary());
    if (filter->kind != NodeKind::kIdentifier)
      return Fail("expected the name of a filter after '|'");
    if (Is(TokenType::kOpenParen)) filter = KITE_TRY(Call(std::move(filter)));
    node->a = std::move(operand);
    node->b = std::move(filter);
    operand = KITE_TRY(Finish(std::move(node)));
  }
  return operand;
}

Result<NodePtr> Parser::UnarySign() {
  Guard guard(this);
  if (guard.too_deep()) return TooDeep();
  if ((Is(TokenType::kUnary) || Is(TokenType::kAdditive)) &&
      (tokens_[pos_].value == "-" || tokens_[pos_].value == "+")) {
    NodePtr node = Make(NodeKind::kUnary, Offset());
    node->str = tokens_[pos_++].value;
    node->a = KITE_TRY(UnarySign());
    return Finish(std::move(node));
  }
  return CallMember();
}

Result<NodePtr> Parser::CallMember() {
  NodePtr member = KITE_TRY(Member(KITE_TRY(Primary())));
  if (Is(TokenType::kOpenParen)) return Call(std::move(member));
  return member;
}

Result<NodePtr> Parser::Call(NodePtr callee) {
  // foo(1)(2).x(3): each call may be followed by members and another call.
  while (true) {
    NodePtr node = Make(NodeKind::kCall, callee->offset);
    node->a = std::move(callee);
    KITE_RETURN_IF_ERROR(Arguments(ArgsMode::kCall, &node->args));
    callee = KITE_TRY(Member(KITE_TRY(Finish(std::move(node)))));
    if (!Is(TokenType::kOpenParen)) return callee;
  }
}

Status Parser::Arguments(ArgsMode mode, std::vector<NodePtr>* args) {
  KITE_RETURN_IF_ERROR(Expect(TokenType::kOpenParen, "'('"));
  std::set<std::string> names;
  bool saw_keyword = false, saw_spread = false;
  while (!Is(TokenType::kCloseParen)) {
    if (pos_ >= tokens_.size()) return Fail("missing ')'");
    const bool keyword_spread = Is(TokenType::kPower);
    const bool spread = Is(TokenType::kMultiplicative) && tokens_[pos_].value == "*";
    if (mode == ArgsMode::kParameters && (keyword_spread || spread)) {
      return Fail("'*' and '**' are not allowed in parameter lists");
    }
    NodePtr argument;
    if (keyword_spread) {
      argument = Make(NodeKind::kKeywordSpread, Offset());
      ++pos_;
      argument->a = KITE_TRY(Expression());
      args->push_back(KITE_TRY(Finish(std::move(argument))));
      if (Is(TokenType::kComma)) ++pos_;
      if (!Is(TokenType::kCloseParen)) return Fail("'**' must be the last argument");
      break;
    }
    if (spread) {
      if (saw_spread) return Fail("only one '*' argument is allowed");
      saw_spread = true;
      argument = Make(NodeKind::kSpread, Offset());
      ++pos_;
      argument->a = KITE_TRY(Expression());
      argument = KITE_TRY(Finish(std::move(argument)));
    } else {
      argument = KITE_TRY(Expression());
      if (Is(TokenType::kEquals)) {
        ++pos_;
        if (argument->kind != NodeKind::kIdentifier) return Fail("expected a name before '='");
        NodePtr keyword = Make(NodeKind::kKeywordArg, argument->offset);
        keyword->str = argument->str;
        keyword->a = KITE_TRY(Expression());
        argument = KITE_TRY(Finish(std::move(keyword)));
      }
      if (mode == ArgsMode::kParameters) {
        if (argument->kind != NodeKind::kIdentifier && argument->kind != NodeKind::kKeywordArg) {
          return Fail("expected a parameter name");
        }
        if (!names.insert(argument->str).second)
          return Fail("duplicate parameter '" + argument->str + "'");
      }
      if (argument->kind == NodeKind::kKeywordArg) {
        saw_keyword = true;
      } else if (saw_keyword) {
        return Fail(mode == ArgsMode::kCall
                        ? "positional argument after a keyword argument"
                        : "parameter without a default after one with a default");
      } else if (saw_spread) {
        return Fail("positional argument after '*'");
      }
    }
    args->push_back(std::move(argument));
    if (Is(TokenType::kComma)) ++pos_;
  }
  ++pos_;  // )
  return Ok();
}

Result<NodePtr> Parser::Member(NodePtr object) {
  while (Is(TokenType::kDot) || Is(TokenType::kOpenBracket)) {
    NodePtr node = Make(NodeKind::kMember, Offset());
    node->computed = Is(TokenType::kOpenBracket);
    ++pos_;
    if (node->computed) {
      node->b = KITE_TRY(Subscript());
      KITE_RETURN_IF_ERROR(Expect(TokenType::kCloseBracket, "']'"));
    } else {
      node->b = KITE_TRY(Primary());
      if (node->b->kind != NodeKind::kIdentifier && node->b->kind != NodeKind::kInt) {
        return Fail("expected a name or an integer after '.'");
      }
    }
    node->a = std::move(object);
    object = KITE_TRY(Finish(std::move(node)));
  }
  return object;
}

Result<NodePtr> Parser::Subscript() {
  const uint32_t offset = Offset();
  std::vector<NodePtr> parts;  // null: a slice bound left out
  bool slice = false;
  while (!Is(TokenType::kCloseBracket)) {
    if (pos_ >= tokens_.size()) return Fail("missing ']'");
    if (Is(TokenType::kColon)) {
      parts.push_back(nullptr);
      ++pos_;
      slice = true;
    } else {
      parts.push_back(KITE_TRY(Expression()));
      if (Is(TokenType::kColon)) {
        ++pos_;
        slice = true;
      }
    }
  }
  if (parts.empty()) return Fail("expected an index or a slice inside '[]'");
  if (!slice) return std::move(parts[0]);
  if (parts.size() > 3) return Fail("a slice has at most 3 parts");
  NodePtr node = Make(NodeKind::kSlice, offset);
  parts.resize(3);
  node->a = std::move(parts[0]);
  node->b = std::move(parts[1]);
  node->c = std::move(parts[2]);
  return Finish(std::move(node));
}

Result<NodePtr> Parser::Primary() {
  if (pos_ >= tokens_.size()) return Fail("unexpected end of template");
  const Token& token = tokens_[pos_++];
  switch (token.type) {
    case TokenType::kNumber: {
      const bool is_float = token.value.find('.') != std::string::npos;
      NodePtr node = Make(is_float ? NodeKind::kFloat : NodeKind::kInt, token.offset);
      node->number = JsStringToNumber(token.value);
      return node;
    }
    case TokenType::kString: {
      NodePtr node = Make(NodeKind::kString, token.offset);
      node->str = token.value;
      while (Is(TokenType::kString)) node->str += tokens_[pos_++].value;  // 'a' 'b' is 'ab'
      return node;
    }
    case TokenType::kIdentifier: {
      NodePtr node = Make(NodeKind::kIdentifier, token.offset);
      node->str = token.value;
      return node;
    }
    case TokenType::kOpenParen: {
      NodePtr node = KITE_TRY(Sequence(/*primary=*/false));
      KITE_RETURN_IF_ERROR(Expect(TokenType::kCloseParen, "')'"));
      return node;
    }
    case TokenType::kOpenBracket: {
      NodePtr node = Make(NodeKind::kArray, token.offset);
      while (!Is(TokenType::kCloseBracket)) {
        if (pos_ >= tokens_.size()) return Fail("missing ']'");
        node->args.push_back(KITE_TRY(Expression()));
        if (Is(TokenType::kComma)) ++pos_;
      }
      ++pos_;
      return Finish(std::move(node));
    }
    case TokenType::kOpenBrace: {
      NodePtr node = Make(NodeKind::kDict, token.offset);
      while (!Is(TokenType::kCloseBrace)) {
        if (pos_ >= tokens_.size()) return Fail("missing '}'");
        node->args.push_back(KITE_TRY(Expression()));
        KITE_RETURN_IF_ERROR(Expect(TokenType::kColon, "':' between a key and its value"));
        node->alternate.push_back(KITE_TRY(Expression()));
        if (Is(TokenType::kComma)) ++pos_;
      }
      ++pos_;
      return Finish(std::move(node));
    }
    default:
      --pos_;
      return Fail(token.type == TokenType::kText ? "unexpected text"
                                                 : "unexpected '" + token.value + "'");
  }
}

}  // namespace kite::jinja::internal
