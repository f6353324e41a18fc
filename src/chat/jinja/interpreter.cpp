#include "chat/jinja/interpreter.h"

#include <algorithm>

#include "chat/jinja/convert.h"
#include "chat/jinja/lexer.h"

namespace kite::jinja {

const Value* Environment::Lookup(std::string_view name) const {
  for (const Environment* env = this; env != nullptr; env = env->parent_) {
    for (const auto& [key, value] : env->variables_) {
      if (key == name) return &value;
    }
  }
  return nullptr;
}

void Environment::Set(const std::string& name, Value value) {
  for (auto& [key, existing] : variables_) {
    if (key == name) {
      existing = std::move(value);
      return;
    }
  }
  variables_.emplace_back(name, std::move(value));
}

bool Environment::HasOwn(std::string_view name) const {
  return std::any_of(variables_.begin(), variables_.end(),
                     [&](const auto& v) { return v.first == name; });
}

std::unexpected<Error> Interpreter::Fail(const Node& node, const std::string& message) const {
  return InvalidInput(DescribePosition(source_, node.offset) + ": " + message);
}

std::unexpected<Error> Interpreter::Fail(const Node& node, const Error& error) const {
  return MakeError(error.code, DescribePosition(source_, node.offset) + ": " + error.message);
}

Result<Value> Interpreter::MakeString(const Node& at, std::string text) const {
  if (text.size() > limits_.max_output_bytes) {
    return std::unexpected(Error{ErrorCode::kOutOfResources,
                                 DescribePosition(source_, at.offset) + ": string longer than " +
                                     std::to_string(limits_.max_output_bytes) + " bytes"});
  }
  return Value::String(std::move(text));
}

Result<Value> Interpreter::MakeList(const Node& at, std::vector<Value> items, bool tuple) const {
  if (items.size() > limits_.max_list_items) {
    return std::unexpected(Error{ErrorCode::kOutOfResources,
                                 DescribePosition(source_, at.offset) + ": list longer than " +
                                     std::to_string(limits_.max_list_items) + " items"});
  }
  if (auto status = CheckDepth(items); !status) return Fail(at, status.error());
  return Value::Array(std::move(items), tuple);
}

Status Interpreter::Append(const Node& at, std::string_view text, std::string* out) const {
  if (out->size() + text.size() > limits_.max_output_bytes) {
    return std::unexpected(Error{ErrorCode::kOutOfResources,
                                 DescribePosition(source_, at.offset) + ": output longer than " +
                                     std::to_string(limits_.max_output_bytes) + " bytes"});
  }
  out->append(text);
  return Ok();
}

Status Interpreter::Step(const Node& at) {
  if (++steps_ > limits_.max_steps) {
    return std::unexpected(Error{ErrorCode::kOutOfResources, DescribePosition(source_, at.offset) +
                                                                 ": rendering took more than " +
                                                                 std::to_string(limits_.max_steps) +
                                                                 " steps"});
  }
  return Ok();
}

Result<std::string> Interpreter::Run(const std::vector<NodePtr>& program, Environment* globals) {
  std::string out;
  const Flow flow = KITE_TRY(ExecBlock(program, *globals, &out));
  if (flow != Flow::kNormal) {
    return InvalidInput("'{% break %}' or '{% continue %}' outside of a for loop");
  }
  return out;
}

Result<Interpreter::Flow> Interpreter::ExecBlock(const std::vector<NodePtr>& body, Environment& env,
                                                 std::string* out) {
  for (const NodePtr& node : body) {
    const Flow flow = KITE_TRY(Exec(*node, env, out));
    if (flow != Flow::kNormal) return flow;
  }
  return Flow::kNormal;
}

Result<Interpreter::Flow> Interpreter::Exec(const Node& node, Environment& env, std::string* out) {
  KITE_RETURN_IF_ERROR(Step(node));
  switch (node.kind) {
    case NodeKind::kText:
      KITE_RETURN_IF_ERROR(Append(node, node.str, out));
      return Flow::kNormal;
    case NodeKind::kIf: {
      const Value test = KITE_TRY(Eval(*node.a, env));
      return ExecBlock(test.Truthy() ? node.body : node.alternate, env, out);
    }
    case NodeKind::kFor:
      return ExecFor(node, env, out);
    case NodeKind::kSet:
      KITE_RETURN_IF_ERROR(ExecSet(node, env));
      return Flow::kNormal;
    case NodeKind::kMacro: {
      Function macro{Function::Kind::kMacro, node.str, nullptr, &node};
      env.Set(node.str, Value::MakeFunction(std::move(macro)));
      return Flow::kNormal;
    }
    case NodeKind::kFilterBlock: {
      std::string rendered;
      const Flow flow = KITE_TRY(ExecBlock(node.body, env, &rendered));
      if (flow != Flow::kNormal) return flow;
      const Value result =
          KITE_TRY(ApplyFilter(*this, Value::String(std::move(rendered)), *node.a, env));
      if (result.is_none() || result.is_undefined()) return Flow::kNormal;
      auto text = ToOutput(result, limits_.max_output_bytes);
      if (!text) return Fail(node, text.error());
      KITE_RETURN_IF_ERROR(Append(node, *text, out));
      return Flow::kNormal;
    }
    case NodeKind::kBreak:
      return Flow::kBreak;
    case NodeKind::kContinue:
      return Flow::kContinue;
    default: {
      const Value value = KITE_TRY(Eval(node, env));
      if (value.is_none() || value.is_undefined()) return Flow::kNormal;
      auto text = ToOutput(value, limits_.max_output_bytes);
      if (!text) return Fail(node, text.error());
      KITE_RETURN_IF_ERROR(Append(node, *text, out));
      return Flow::kNormal;
    }
  }
}

Result<Interpreter::Flow> Interpreter::ExecFor(const Node& node, Environment& env,
                                               std::string* out) {
  Environment scope(&env);
  const Node* condition = nullptr;
  Value iterable;
  if (node.b->kind == NodeKind::kSelect) {
    iterable = KITE_TRY(Eval(*node.b->a, scope));
    condition = node.b->b.get();
  } else {
    iterable = KITE_TRY(Eval(*node.b, scope));
  }
  std::vector<Value> keys;
  const std::vector<Value>* all = nullptr;
  if (iterable.is_array()) {
    all = &iterable.items();
  } else if (iterable.is_object()) {
    for (const auto& entry : iterable.entries()) keys.push_back(Value::String(entry.first));
    all = &keys;
  } else {
    return Fail(*node.b, std::string("Expected iterable or object type in for loop: got ") +
                             iterable.TypeName());
  }

  const Node& target = *node.a;
  const auto bind = [&](const Value& item, Environment& where) -> Status {
    if (target.kind == NodeKind::kIdentifier) {
      where.Set(target.str, item);
      return Ok();
    }
    for (size_t j = 0; j < target.args.size(); ++j) {
      if (target.args[j]->kind != NodeKind::kIdentifier) {
        return Fail(*target.args[j], "cannot unpack into something that is not a name");
      }
      where.Set(target.args[j]->str, item.items()[j]);
    }
    return Ok();
  };

  // Like the reference, every item is checked (and filtered) before the body runs once.
  std::vector<const Value*> items;
  for (const Value& item : *all) {
    KITE_RETURN_IF_ERROR(Step(node));
    if (target.kind == NodeKind::kTuple) {
      if (!item.is_array() || item.is_tuple()) {
        return Fail(target, std::string("Cannot unpack non-iterable type: ") + item.TypeName());
      }
      if (item.items().size() != target.args.size()) {
        return Fail(target, target.args.size() > item.items().size() ? "too few items to unpack"
                                                                     : "too many items to unpack");
      }
    }
    if (condition) {
      Environment item_scope(&scope);
      KITE_RETURN_IF_ERROR(bind(item, item_scope));
      if (!KITE_TRY(Eval(*condition, item_scope)).Truthy()) continue;
    }
    items.push_back(&item);
  }

  bool iterated = false;
  const double length = static_cast<double>(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    const double index = static_cast<double>(i);
    Object loop = {
        {"index", Value::Int(index + 1)},
        {"index0", Value::Int(index)},
        {"revindex", Value::Int(length - index)},
        {"revindex0", Value::Int(length - index - 1)},
        {"first", Value::Bool(i == 0)},
        {"last", Value::Bool(i + 1 == items.size())},
        {"length", Value::Int(length)},
        {"previtem", i > 0 ? *items[i - 1] : Value()},
        {"nextitem", i + 1 < items.size() ? *items[i + 1] : Value()},
    };
    scope.Set("loop", Value::MakeObject(std::move(loop)));
    KITE_RETURN_IF_ERROR(bind(*items[i], scope));
    std::string rendered;
    const Flow flow = KITE_TRY(ExecBlock(node.body, scope, &rendered));
    // As in the reference, an iteration cut short by break or continue contributes nothing.
    if (flow == Flow::kContinue) continue;
    if (flow == Flow::kBreak) break;
    KITE_RETURN_IF_ERROR(Append(node, rendered, out));
    iterated = true;
  }
  if (!iterated) {
    std::string rendered;
    const Flow flow = KITE_TRY(ExecBlock(node.alternate, scope, &rendered));
    if (flow != Flow::kNormal) return flow;
    KITE_RETURN_IF_ERROR(Append(node, rendered, out));
  }
  return Flow::kNormal;
}

Status Interpreter::ExecSet(const Node& node, Environment& env) {
  Value value;
  if (node.b) {
    value = KITE_TRY(Eval(*node.b, env));
  } else {
    std::string rendered;
    const Flow flow = KITE_TRY(ExecBlock(node.body, env, &rendered));
    if (flow != Flow::kNormal)
      return Fail(node, "'{% break %}' or '{% continue %}' inside '{% set %}'");
    value = Value::String(std::move(rendered));
  }
  const Node& target = *node.a;
  switch (target.kind) {
    case NodeKind::kIdentifier:
      env.Set(target.str, std::move(value));
      return Ok();
    case NodeKind::kTuple: {
      if (!value.is_array())
        return Fail(node,
                    std::string("Cannot unpack non-iterable type in set: ") + value.TypeName());
      if (value.items().size() != target.args.size()) {
        return Fail(node, target.args.size() > value.items().size()
                              ? "too few items to unpack in set"
                              : "too many items to unpack in set");
      }
      for (size_t i = 0; i < target.args.size(); ++i) {
        if (target.args[i]->kind != NodeKind::kIdentifier)
          return Fail(*target.args[i], "cannot assign to this");
        env.Set(target.args[i]->str, value.items()[i]);
      }
      return Ok();
    }
    case NodeKind::kMember: {
      const Value object = KITE_TRY(Eval(*target.a, env));
      if (object.kind() != ValueKind::kNamespace)
        return Fail(node, "cannot assign attribute on non-namespace object");
      if (target.b->kind != NodeKind::kIdentifier)
        return Fail(node, "Cannot assign to member with non-identifier property");
      // Namespaces holding namespaces could form cycles; chat templates never need them.
      if (value.ContainsNamespace())
        return Fail(node, "a namespace attribute cannot hold a namespace");
      if (value.depth() >= kMaxValueDepth) return Fail(node, "value nests too deeply");
      object.SetAttribute(target.b->str, std::move(value));
      return Ok();
    }
    default:
      return Fail(node, "invalid target of '{% set %}'");
  }
}

Result<std::pair<std::vector<Value>, Object>> Interpreter::EvalArguments(
    const std::vector<NodePtr>& args, Environment& env) {
  std::vector<Value> positional;
  Object keywords;
  for (const NodePtr& arg : args) {
    if (arg->kind == NodeKind::kSpread) {
      const Value value = KITE_TRY(Eval(*arg->a, env));
      if (!value.is_array())
        return Fail(*arg, std::string("Cannot unpack non-iterable type: ") + value.TypeName());
      positional.insert(positional.end(), value.items().begin(), value.items().end());
    } else if (arg->kind != NodeKind::kKeywordArg && arg->kind != NodeKind::kKeywordSpread) {
      positional.push_back(KITE_TRY(Eval(*arg, env)));
    }
  }
  const auto add = [&](const Node& at, const std::string& key, Value value) -> Status {
    for (const auto& entry : keywords) {
      if (entry.first == key)
        return Fail(at, "got multiple values for keyword argument '" + key + "'");
    }
    keywords.emplace_back(key, std::move(value));
    return Ok();
  };
  for (const NodePtr& arg : args) {
    if (arg->kind == NodeKind::kKeywordArg) {
      KITE_RETURN_IF_ERROR(add(*arg, arg->str, KITE_TRY(Eval(*arg->a, env))));
    } else if (arg->kind == NodeKind::kKeywordSpread) {
      const Value value = KITE_TRY(Eval(*arg->a, env));
      if (!value.is_object())
        return Fail(*arg,
                    std::string("Argument after ** must be a mapping, not ") + value.TypeName());
      for (const auto& [key, item] : value.entries()) KITE_RETURN_IF_ERROR(add(*arg, key, item));
    }
  }
  if (positional.size() > limits_.max_list_items) return Fail(*args.front(), "too many arguments");
  return std::make_pair(std::move(positional), std::move(keywords));
}

Result<Value> Interpreter::Call(const Value& callee, std::vector<Value> args, Object kwargs,
                                Environment& env, const Node& at) {
  if (callee.kind() != ValueKind::kFunction) {
    return Fail(
        at, std::string("Cannot call something that is not a function: got ") + callee.TypeName());
  }
  const Function& function = callee.function();
  if (function.kind == Function::Kind::kMacro) {
    return CallMacro(*function.macro, std::move(args), std::move(kwargs), env, at);
  }
  if (!kwargs.empty())
    args.push_back(Value::MakeObject(std::move(kwargs), /*keyword_arguments=*/true));
  return CallBuiltin(*this, function, std::move(args), at);
}

Result<Value> Interpreter::CallMacro(const Node& macro, std::vector<Value> args, Object kwargs,
                                     Environment& env, const Node& at) {
  if (call_depth_ >= limits_.max_call_depth) {
    return std::unexpected(
        Error{ErrorCode::kOutOfResources, DescribePosition(source_, at.offset) +
                                              ": macros nest deeper than " +
                                              std::to_string(limits_.max_call_depth) + " calls"});
  }
  Environment scope(&env);
  std::vector<const Node*> pending_defaults;
  for (size_t i = 0; i < macro.args.size(); ++i) {
    const Node& parameter = *macro.args[i];
    Value value;
    bool given = i < args.size();
    if (given) {
      value = args[i];
    } else {
      const auto it = std::find_if(kwargs.begin(), kwargs.end(),
                                   [&](const auto& e) { return e.first == parameter.str; });
      if (it != kwargs.end()) {
        value = std::move(it->second);
        kwargs.erase(it);
        given = true;
      }
    }
    if (!given && parameter.kind == NodeKind::kKeywordArg) pending_defaults.push_back(&parameter);
    scope.Set(parameter.str, std::move(value));
  }
  const std::string name = "'" + macro.str + "'";
  if (macro.reads_kwargs) {
    scope.Set("kwargs", Value::MakeObject(std::move(kwargs)));
  } else if (!kwargs.empty()) {
    return Fail(at, "macro " + name + " takes no keyword argument '" + kwargs.front().first + "'");
  }
  if (macro.reads_varargs) {
    std::vector<Value> rest;
    if (args.size() > macro.args.size()) rest.assign(args.begin() + macro.args.size(), args.end());
    scope.Set("varargs", Value::Array(std::move(rest)));
  } else if (args.size() > macro.args.size()) {
    return Fail(at, "macro " + name + " takes not more than " + std::to_string(macro.args.size()) +
                        " argument(s)");
  }
  for (const Node* parameter : pending_defaults) {
    scope.Set(parameter->str, KITE_TRY(Eval(*parameter->a, scope)));
  }
  ++call_depth_;
  std::string rendered;
  auto flow = ExecBlock(macro.body, scope, &rendered);
  --call_depth_;
  if (!flow) return std::unexpected(std::move(flow.error()));
  if (*flow != Flow::kNormal)
    return Fail(at, "'{% break %}' or '{% continue %}' outside of a for loop");
  return Value::String(std::move(rendered));
}

}  // namespace kite::jinja
