// A parsed Jinja template, rendered the way @huggingface/jinja renders chat templates.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "chat/jinja/ast.h"
#include "chat/jinja/interpreter.h"
#include "chat/jinja/value.h"

namespace kite::jinja {

class Template {
 public:
  // Parses `source`; invalid UTF-8 is read as U+FFFD. Syntax errors name the line and column.
  static Result<Template> Parse(std::string_view source);

  // Renders with `variables` declared after the globals (true, none, range, namespace, ...);
  // declaring one of those again is an error, as in the reference.
  Result<std::string> Render(const std::vector<std::pair<std::string, Value>>& variables,
                             const RenderLimits& limits = {}) const;

 private:
  std::string source_;
  std::shared_ptr<const std::vector<NodePtr>> program_;  // shared: Templates copy cheaply
};

}  // namespace kite::jinja
