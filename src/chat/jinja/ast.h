// The syntax tree of a template: one node type whose fields each kind uses as documented.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kite::jinja {

enum class NodeKind : uint8_t {
  // Statements (inside a body).
  kText,         // str: the text
  kIf,           // a: test; body: then; alternate: else (an elif is a nested kIf)
  kFor,          // a: target (identifier or tuple); b: iterable (a kSelect filters);
                 // body; alternate: the else block, rendered when nothing was iterated
  kSet,          // a: target (identifier, tuple or member); b: value, or null with body
  kMacro,        // str: name; args: parameters (identifiers or kKeywordArg); body
  kFilterBlock,  // a: filter (identifier or call); body
  kBreak,
  kContinue,
  // Expressions (a body may hold one: it is printed).
  kInt,            // number
  kFloat,          // number
  kString,         // str
  kIdentifier,     // str
  kArray,          // args: items
  kTuple,          // args: items
  kDict,           // args: keys; alternate: values
  kMember,         // a: object; b: property; computed: a[b] rather than a.b
  kSlice,          // a, b, c: start, stop, step, each may be null
  kCall,           // a: callee; args
  kKeywordArg,     // str: name; a: value
  kSpread,         // a: *value in a call
  kKeywordSpread,  // a: **value in a call
  kBinary,         // str: operator ("+", "and", "in", "not in", ...); a, b
  kUnary,          // str: "not", "-" or "+"; a
  kFilter,         // a: operand; b: filter (identifier or call)
  kTest,           // a: operand; str: test name; negated
  kSelect,         // a: value; b: condition (`a if b` without else: undefined when false)
  kTernary,        // a: condition; b: if true; c: if false
};

struct Node;
using NodePtr = std::unique_ptr<Node>;

struct Node {
  NodeKind kind;
  uint32_t offset = 0;  // into the original source, for error messages
  std::string str;
  double number = 0;
  bool computed = false;       // kMember
  bool negated = false;        // kTest
  bool reads_kwargs = false;   // kMacro: the body reads `kwargs` (accepts extra keywords)
  bool reads_varargs = false;  // kMacro: the body reads `varargs` (accepts extra arguments)
  int depth = 1;               // height of the subtree, bounded by the parser
  NodePtr a, b, c;
  std::vector<NodePtr> args;  // call arguments, list items, macro parameters
  std::vector<NodePtr> body;
  std::vector<NodePtr> alternate;  // also dict values
};

}  // namespace kite::jinja
