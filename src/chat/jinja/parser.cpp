#include "chat/jinja/parser.h"

#include <utility>

#include "chat/jinja/parser_impl.h"

namespace kite::jinja {
namespace internal {
namespace {

// Whether the name is read anywhere under `node`.
bool Mentions(const Node& node, std::string_view name) {
  if (node.kind == NodeKind::kIdentifier && node.str == name) return true;
  for (const NodePtr* child : {&node.a, &node.b, &node.c}) {
    if (*child && Mentions(**child, name)) return true;
  }
  for (const auto* list : {&node.args, &node.body, &node.alternate}) {
    for (const NodePtr& child : *list) {
      if (Mentions(*child, name)) return true;
    }
  }
  return false;
}

}  // namespace

Result<NodePtr> Parser::Any() {
  Guard guard(this);
  if (guard.too_deep()) return TooDeep();
  const Token& token = tokens_[pos_];
  switch (token.type) {
    case TokenType::kComment:
      ++pos_;
      return NodePtr();
    case TokenType::kText: {
      NodePtr node = Make(NodeKind::kText, token.offset);
      node->str = token.value;
      ++pos_;
      return node;
    }
    case TokenType::kOpenStatement:
      return Statement();
    case TokenType::kOpenExpression: {
      ++pos_;
      NodePtr node = KITE_TRY(Expression());
      KITE_RETURN_IF_ERROR(Expect(TokenType::kCloseExpression, "'}}'"));
      return node;
    }
    default:
      return Fail("unexpected '" + token.value + "'");
  }
}

Result<NodePtr> Parser::Statement() {
  ++pos_;  // {%
  if (!Is(TokenType::kIdentifier)) return Fail("expected a statement name after '{%'");
  const std::string name = tokens_[pos_].value;
  const uint32_t offset = tokens_[pos_].offset;
  ++pos_;
  if (name == "if") {
    NodePtr node = KITE_TRY(If());
    KITE_RETURN_IF_ERROR(ExpectEnd("endif"));
    return node;
  }
  if (name == "for") {
    NodePtr node = KITE_TRY(For());
    KITE_RETURN_IF_ERROR(ExpectEnd("endfor"));
    return node;
  }
  if (name == "macro") {
    NodePtr node = KITE_TRY(Macro());
    KITE_RETURN_IF_ERROR(ExpectEnd("endmacro"));
    return node;
  }
  if (name == "set") return Set();
  if (name == "filter") return FilterBlock();
  if (name == "break" || name == "continue") {
    KITE_RETURN_IF_ERROR(Expect(TokenType::kCloseStatement, "'%}'"));
    return Make(name == "break" ? NodeKind::kBreak : NodeKind::kContinue, offset);
  }
  pos_ -= 1;
  if (name == "call") return Fail("'{% call %}' blocks are not supported");
  return Fail("unknown statement '" + name + "'");
}

Result<NodePtr> Parser::If() {
  Guard guard(this);
  if (guard.too_deep()) return TooDeep();
  NodePtr node = Make(NodeKind::kIf, Offset());
  node->a = KITE_TRY(Expression());
  KITE_RETURN_IF_ERROR(Expect(TokenType::kCloseStatement, "'%}'"));
  node->body = KITE_TRY(Body({"elif", "else", "endif"}, "'{% endif %}'"));
  if (IsStatement({"elif"})) {
    pos_ += 2;
    node->alternate.push_back(KITE_TRY(If()));
  } else if (IsStatement({"else"})) {
    pos_ += 2;
    KITE_RETURN_IF_ERROR(Expect(TokenType::kCloseStatement, "'%}'"));
    node->alternate = KITE_TRY(Body({"endif"}, "'{% endif %}'"));
  }
  return Finish(std::move(node));
}

Result<NodePtr> Parser::For() {
  NodePtr node = Make(NodeKind::kFor, Offset());
  node->a = KITE_TRY(Sequence(/*primary=*/true));
  if (node->a->kind != NodeKind::kIdentifier && node->a->kind != NodeKind::kTuple) {
    return Fail("expected a name or names to loop over");
  }
  if (!IsIdentifier("in")) return Fail("expected 'in' after the loop variable");
  ++pos_;
  node->b = KITE_TRY(Expression());
  KITE_RETURN_IF_ERROR(Expect(TokenType::kCloseStatement, "'%}'"));
  node->body = KITE_TRY(Body({"endfor", "else"}, "'{% endfor %}'"));
  if (IsStatement({"else"})) {
    pos_ += 2;
    KITE_RETURN_IF_ERROR(Expect(TokenType::kCloseStatement, "'%}'"));
    node->alternate = KITE_TRY(Body({"endfor"}, "'{% endfor %}'"));
  }
  return Finish(std::move(node));
}

Result<NodePtr> Parser::Set() {
  NodePtr node = Make(NodeKind::kSet, Offset());
  node->a = KITE_TRY(Sequence(/*primary=*/false));
  if (Is(TokenType::kEquals)) {
    ++pos_;
    node->b = KITE_TRY(Sequence(/*primary=*/false));
  } else {
    KITE_RETURN_IF_ERROR(Expect(TokenType::kCloseStatement, "'=' or '%}'"));
    node->body = KITE_TRY(Body({"endset"}, "'{% endset %}'"));
    pos_ += 2;
  }
  KITE_RETURN_IF_ERROR(Expect(TokenType::kCloseStatement, "'%}'"));
  return Finish(std::move(node));
}

Result<NodePtr> Parser::Macro() {
  NodePtr node = Make(NodeKind::kMacro, Offset());
  NodePtr name = KITE_TRY(Primary());
  if (name->kind != NodeKind::kIdentifier) return Fail("expected the macro's name");
  node->str = name->str;
  KITE_RETURN_IF_ERROR(Arguments(ArgsMode::kParameters, &node->args));
  KITE_RETURN_IF_ERROR(Expect(TokenType::kCloseStatement, "'%}'"));
  node->body = KITE_TRY(Body({"endmacro"}, "'{% endmacro %}'"));
  for (const NodePtr& statement : node->body) {
    node->reads_kwargs = node->reads_kwargs || Mentions(*statement, "kwargs");
    node->reads_varargs = node->reads_varargs || Mentions(*statement, "varargs");
  }
  return Finish(std::move(node));
}

Result<NodePtr> Parser::FilterBlock() {
  NodePtr node = Make(NodeKind::kFilterBlock, Offset());
  node->a = KITE_TRY(Primary());
  if (node->a->kind == NodeKind::kIdentifier && Is(TokenType::kOpenParen)) {
    node->a = KITE_TRY(Call(std::move(node->a)));
  }
  KITE_RETURN_IF_ERROR(Expect(TokenType::kCloseStatement, "'%}'"));
  node->body = KITE_TRY(Body({"endfilter"}, "'{% endfilter %}'"));
  KITE_RETURN_IF_ERROR(ExpectEnd("endfilter"));
  return Finish(std::move(node));
}

}  // namespace internal

Result<std::vector<NodePtr>> Parse(std::string_view source, const std::vector<Token>& tokens) {
  return internal::Parser(source, tokens).Program();
}

}  // namespace kite::jinja
