// The parser's class, shared by parser.cpp (statements) and parser_expressions.cpp.
#pragma once

#include <algorithm>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "chat/jinja/ast.h"
#include "chat/jinja/lexer.h"
#include "chat/jinja/parser.h"

namespace kite::jinja::internal {

class Parser {
 public:
  Parser(std::string_view source, const std::vector<Token>& tokens)
      : source_(source), tokens_(tokens) {}

  Result<std::vector<NodePtr>> Program() {
    std::vector<NodePtr> body;
    while (pos_ < tokens_.size()) {
      NodePtr node = KITE_TRY(Any());
      if (node) body.push_back(std::move(node));
    }
    return body;
  }

 private:
  enum class ArgsMode { kCall, kParameters };

  // Counts recursion of the parser itself (parentheses, `not not ...`, nested blocks).
  class Guard {
   public:
    explicit Guard(Parser* parser) : parser_(parser) { ++parser_->recursion_; }
    ~Guard() { --parser_->recursion_; }
    bool too_deep() const { return parser_->recursion_ > kMaxNodeDepth; }

   private:
    Parser* parser_;
  };

  std::unexpected<Error> Fail(const std::string& what) const {
    const uint32_t offset =
        pos_ < tokens_.size() ? tokens_[pos_].offset : static_cast<uint32_t>(source_.size());
    return InvalidInput(DescribePosition(source_, offset) + ": " + what);
  }
  std::unexpected<Error> TooDeep() const {
    return Fail("template nests deeper than " + std::to_string(kMaxNodeDepth));
  }

  bool Is(TokenType type, size_t ahead = 0) const {
    return pos_ + ahead < tokens_.size() && tokens_[pos_ + ahead].type == type;
  }
  bool IsIdentifier(std::string_view name, size_t ahead = 0) const {
    return Is(TokenType::kIdentifier, ahead) && tokens_[pos_ + ahead].value == name;
  }
  bool IsStatement(std::initializer_list<std::string_view> names) const {
    if (!Is(TokenType::kOpenStatement) || !Is(TokenType::kIdentifier, 1)) return false;
    return std::find(names.begin(), names.end(), tokens_[pos_ + 1].value) != names.end();
  }
  Status Expect(TokenType type, const char* what) {
    if (!Is(type)) return Fail(std::string("expected ") + what);
    ++pos_;
    return Ok();
  }
  Status ExpectEnd(const char* name) {
    KITE_RETURN_IF_ERROR(Expect(TokenType::kOpenStatement, "'{%'"));
    if (!IsIdentifier(name)) return Fail(std::string("expected '") + name + "'");
    ++pos_;
    return Expect(TokenType::kCloseStatement, "'%}'");
  }

  NodePtr Make(NodeKind kind, uint32_t offset) {
    auto node = std::make_unique<Node>();
    node->kind = kind;
    node->offset = offset;
    return node;
  }
  // Records the subtree height; chains built in loops (a + b + c ..., a.b.c ...) grow it
  // without recursion, so this is where they are bounded.
  Result<NodePtr> Finish(NodePtr node) {
    int deepest = 0;
    for (const NodePtr* child : {&node->a, &node->b, &node->c}) {
      if (*child) deepest = std::max(deepest, (*child)->depth);
    }
    for (const auto* list : {&node->args, &node->body, &node->alternate}) {
      for (const NodePtr& child : *list) deepest = std::max(deepest, child->depth);
    }
    node->depth = deepest + 1;
    if (node->depth > kMaxNodeDepth) return TooDeep();
    return node;
  }
  uint32_t Offset() const {
    return pos_ < tokens_.size() ? tokens_[pos_].offset : static_cast<uint32_t>(source_.size());
  }

  // Parses a block body until one of `ends` opens a statement.
  Result<std::vector<NodePtr>> Body(std::initializer_list<std::string_view> ends,
                                    const char* missing) {
    std::vector<NodePtr> body;
    while (!IsStatement(ends)) {
      if (pos_ >= tokens_.size()) return Fail(std::string("missing ") + missing);
      NodePtr node = KITE_TRY(Any());
      if (node) body.push_back(std::move(node));
    }
    return body;
  }

  Result<NodePtr> Any();
  Result<NodePtr> Statement();
  Result<NodePtr> If();
  Result<NodePtr> For();
  Result<NodePtr> Set();
  Result<NodePtr> Macro();
  Result<NodePtr> FilterBlock();

  Result<NodePtr> Expression();
  Result<NodePtr> Sequence(bool primary);
  Result<NodePtr> Or();
  Result<NodePtr> And();
  Result<NodePtr> Not();
  Result<NodePtr> Comparison();
  Result<NodePtr> Binary(TokenType type, Result<NodePtr> (Parser::*operand)());
  Result<NodePtr> Additive() { return Binary(TokenType::kAdditive, &Parser::Multiplicative); }
  Result<NodePtr> Multiplicative() { return Binary(TokenType::kMultiplicative, &Parser::Power); }
  Result<NodePtr> Power() { return Binary(TokenType::kPower, &Parser::TestExpression); }
  Result<NodePtr> TestExpression();
  Result<NodePtr> FilterExpression();
  Result<NodePtr> UnarySign();
  Result<NodePtr> CallMember();
  Result<NodePtr> Call(NodePtr callee);
  Status Arguments(ArgsMode mode, std::vector<NodePtr>* args);
  Result<NodePtr> Member(NodePtr object);
  Result<NodePtr> Subscript();
  Result<NodePtr> Primary();

  std::string_view source_;
  const std::vector<Token>& tokens_;
  size_t pos_ = 0;
  int recursion_ = 0;
};

}  // namespace kite::jinja::internal
