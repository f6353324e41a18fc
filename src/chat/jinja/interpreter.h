// Renders a parsed template: statements write text, expressions evaluate to values, with the
// scoping and the quirks of @huggingface/jinja (one scope per for loop, dynamic scope for
// macros, printing of undefined as nothing).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "chat/jinja/ast.h"
#include "chat/jinja/value.h"

namespace kite::jinja {

// Bounds on one render, so hostile templates fail with an error instead of exhausting memory,
// time or the stack.
struct RenderLimits {
  size_t max_output_bytes = size_t{16} << 20;  // also the longest string a template can build
  size_t max_list_items = size_t{1} << 20;     // longest list (range(), list + list)
  uint64_t max_steps = 50'000'000;             // evaluated nodes
  int max_call_depth = 64;                     // nested macro calls
};

// A scope: variables set here, then those of the enclosing scopes.
class Environment {
 public:
  explicit Environment(const Environment* parent = nullptr) : parent_(parent) {}

  const Value* Lookup(std::string_view name) const;
  void Set(const std::string& name, Value value);
  bool HasOwn(std::string_view name) const;

 private:
  const Environment* parent_;
  std::vector<std::pair<std::string, Value>> variables_;
};

class Interpreter {
 public:
  Interpreter(std::string_view source, const RenderLimits& limits)
      : source_(source), limits_(limits) {}

  // Renders `program` with `globals` as the outermost scope.
  Result<std::string> Run(const std::vector<NodePtr>& program, Environment* globals);

  // Evaluates an expression node.
  Result<Value> Eval(const Node& node, Environment& env);

  // Positional arguments, then keyword arguments, of a call (spreads expanded).
  Result<std::pair<std::vector<Value>, Object>> EvalArguments(const std::vector<NodePtr>& args,
                                                              Environment& env);

  // Calls a function value; a non-empty `kwargs` is passed as a trailing keyword-arguments dict.
  Result<Value> Call(const Value& callee, std::vector<Value> args, Object kwargs, Environment& env,
                     const Node& at);

  // An error that names the position of `node` in the template.
  std::unexpected<Error> Fail(const Node& node, const std::string& message) const;
  std::unexpected<Error> Fail(const Node& node, const Error& error) const;

  // A string value, refused when longer than the output limit.
  Result<Value> MakeString(const Node& at, std::string text) const;
  // A list value, refused when longer than the list limit or nested too deeply.
  Result<Value> MakeList(const Node& at, std::vector<Value> items, bool tuple = false) const;

  const RenderLimits& limits() const { return limits_; }

 private:
  enum class Flow { kNormal, kBreak, kContinue };

  Result<Flow> ExecBlock(const std::vector<NodePtr>& body, Environment& env, std::string* out);
  Result<Flow> Exec(const Node& node, Environment& env, std::string* out);
  Result<Flow> ExecFor(const Node& node, Environment& env, std::string* out);
  Status ExecSet(const Node& node, Environment& env);
  Result<Value> CallMacro(const Node& macro, std::vector<Value> args, Object kwargs,
                          Environment& env, const Node& at);
  Status Append(const Node& at, std::string_view text, std::string* out) const;
  Status Step(const Node& at);

  Result<Value> EvalMember(const Node& node, Environment& env);
  Result<Value> EvalSlice(const Value& object, const Node& slice, Environment& env);
  Result<Value> EvalBinary(const Node& node, Environment& env);
  Result<Value> EvalUnary(const Node& node, Environment& env);
  Result<Value> EvalDict(const Node& node, Environment& env);

  std::string_view source_;
  RenderLimits limits_;
  uint64_t steps_ = 0;
  int call_depth_ = 0;
};

// Filters (`x | name(args)`), tests (`x is name`), methods (`x.name(args)`) and globals.
Result<Value> ApplyFilter(Interpreter& interp, const Value& operand, const Node& filter,
                          Environment& env);
Result<bool> ApplyTest(const std::string& name, const Value& operand, const Value* argument);
bool IsKnownTest(const std::string& name);
// The attribute `name` of a string or dict that is a method or property (`s.upper`, `d.items`).
Value BuiltinAttribute(const Value& object, const std::string& name);
// Calls a global or a method; keyword arguments arrive as a trailing is_kwargs() dict.
Result<Value> CallBuiltin(Interpreter& interp, const Function& function, std::vector<Value> args,
                          const Node& at);
// Declares the globals every template sees (true, none, range, namespace, raise_exception, ...).
void DeclareGlobals(Environment* env);

}  // namespace kite::jinja
