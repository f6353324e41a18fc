#include "chat/jinja/template.h"

#include "chat/jinja/js_string.h"
#include "chat/jinja/lexer.h"
#include "chat/jinja/parser.h"

namespace kite::jinja {

Result<Template> Template::Parse(std::string_view source) {
  Template t;
  t.source_ = SanitizeUtf8(source);
  if (t.source_.size() > UINT32_MAX / 2) return InvalidInput("template is larger than 2 GiB");
  const std::vector<Token> tokens = KITE_TRY(Tokenize(t.source_));
  t.program_ =
      std::make_shared<const std::vector<NodePtr>>(KITE_TRY(jinja::Parse(t.source_, tokens)));
  return t;
}

Result<std::string> Template::Render(const std::vector<std::pair<std::string, Value>>& variables,
                                     const RenderLimits& limits) const {
  Environment globals;
  DeclareGlobals(&globals);
  for (const auto& [name, value] : variables) {
    if (globals.HasOwn(name)) return InvalidInput("variable '" + name + "' is already declared");
    globals.Set(name, value);
  }
  Interpreter interpreter(source_, limits);
  return interpreter.Run(*program_, &globals);
}

}  // namespace kite::jinja
