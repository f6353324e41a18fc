// Tokens → syntax tree, with @huggingface/jinja's grammar and operator precedence.
#pragma once

#include <string_view>
#include <vector>

#include "base/status.h"
#include "chat/jinja/ast.h"
#include "chat/jinja/lexer.h"

namespace kite::jinja {

// Deepest nesting of statements and expressions a template may have; keeps parsing, rendering
// and destroying the tree within a small stack.
inline constexpr int kMaxNodeDepth = 200;

// Parses the tokens of `source` into the template's top-level body. Errors name the line and
// column in `source`.
Result<std::vector<NodePtr>> Parse(std::string_view source, const std::vector<Token>& tokens);

}  // namespace kite::jinja
