// libFuzzer: arbitrary template text, parsed and rendered on a fixed conversation. Any input must
// end in output or an error, within the render limits; never a crash, hang or leak.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "chat/chat_template.h"
#include "chat/jinja/template.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view source(reinterpret_cast<const char*>(data), size);
  auto tmpl = kite::jinja::Template::Parse(source);
  if (!tmpl) return 0;

  using kite::jinja::Value;
  std::vector<Value> messages;
  for (const auto& [role, content] :
       {std::pair{"system", "Be brief."}, std::pair{"user", "Hi {{ there }}"},
        std::pair{"assistant", " héllo 🚀 "}, std::pair{"user", ""}}) {
    messages.push_back(
        Value::MakeObject({{"role", Value::String(role)}, {"content", Value::String(content)}}));
  }
  const std::vector<std::pair<std::string, Value>> variables = {
      {"messages", Value::Array(std::move(messages))},
      {"add_generation_prompt", Value::Bool(true)},
      {"bos_token", Value::String("<s>")},
      {"eos_token", Value::String("</s>")},
  };
  // Small limits keep each input fast; the default ones are exercised by the unit tests.
  kite::jinja::RenderLimits limits;
  limits.max_output_bytes = 1 << 16;
  limits.max_list_items = 1 << 12;
  limits.max_steps = 200'000;
  limits.max_call_depth = 16;
  auto out = tmpl->Render(variables, limits);
  if (out && out->size() > limits.max_output_bytes) std::abort();
  return 0;
}
