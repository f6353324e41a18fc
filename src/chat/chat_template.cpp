#include "chat/chat_template.h"

#include "chat/jinja/js_string.h"

namespace kite {
namespace {

struct Builtin {
  const char* name;
  const char* source;
};

// Copied from testdata/chat_templates/<name>.jinja (see SOURCES.md there); a test checks that
// they stay identical.
constexpr Builtin kBuiltins[] = {
    {"chatml",
     "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n"
     "' + message['content'] + '<|im_end|>' + '\n"
     "'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n"
     "' }}{% endif %}"},
    {"gemma",
     "{{ bos_token }}{% if messages[0]['role'] == 'system' %}{{ raise_exception('System ro"
     "le not supported') }}{% endif %}{% for message in messages %}{% if (message['role'] "
     "== 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must a"
     "lternate user/assistant/user/assistant/...') }}{% endif %}{% if (message['role'] == "
     "'assistant') %}{% set role = 'model' %}{% else %}{% set role = message['role'] %}{% "
     "endif %}{{ '<start_of_turn>' + role + '\n"
     "' + message['content'] | trim + '<end_of_turn>\n"
     "' }}{% endfor %}{% if add_generation_prompt %}{{'<start_of_turn>model\n"
     "'}}{% endif %}"},
    {"llama2",
     "{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}{% set"
     " system_message = messages[0]['content'] %}{% else %}{% set loop_messages = messages"
     " %}{% set system_message = false %}{% endif %}{% for message in loop_messages %}{% i"
     "f (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conver"
     "sation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if l"
     "oop.index0 == 0 and system_message != false %}{% set content = '<<SYS>>\\n' + system"
     "_message + '\\n<</SYS>>\\n\\n' + message['content'] %}{% else %}{% set content = mes"
     "sage['content'] %}{% endif %}{% if message['role'] == 'user' %}{{ bos_token + '[INST"
     "] ' + content.strip() + ' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ ' '"
     "  + content.strip() + ' ' + eos_token }}{% endif %}{% endfor %}"},
    {"llama3",
     "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content ="
     " '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n"
     "\n"
     "'+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}{% set conten"
     "t = bos_token + content %}{% endif %}{{ content }}{% endfor %}{% if add_generation_p"
     "rompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n"
     "\n"
     "' }}{% endif %}"},
    {"mistral",
     "{{ bos_token }}{% for message in messages %}{% if (message['role'] == 'user') != (lo"
     "op.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/ass"
     "istant/user/assistant/...') }}{% endif %}{% if message['role'] == 'user' %}{{ '[INST"
     "] ' + message['content'] + ' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ "
     "message['content'] + eos_token + ' ' }}{% else %}{{ raise_exception('Only user and a"
     "ssistant roles are supported!') }}{% endif %}{% endfor %}"},
    {"phi3",
     "{% for message in messages %}{% if message['role'] == 'system' %}{{'<|system|>\n"
     "' + message['content'] + '<|end|>\n"
     "'}}{% elif message['role'] == 'user' %}{{'<|user|>\n"
     "' + message['content'] + '<|end|>\n"
     "'}}{% elif message['role'] == 'assistant' %}{{'<|assistant|>\n"
     "' + message['content'] + '<|end|>\n"
     "'}}{% endif %}{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>\n"
     "' }}{% else %}{{ eos_token }}{% endif %}"},
    {"qwen2",
     "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
     "{{ '<|im_start|>system\n"
     "You are a helpful assistant.<|im_end|>\n"
     "' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n"
     "' + message['content'] + '<|im_end|>' + '\n"
     "'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n"
     "' }}{% endif %}"},
    {"smollm2",
     "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
     "{{ '<|im_start|>system\n"
     "You are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
     "' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n"
     "' + message['content'] + '<|im_end|>' + '\n"
     "'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n"
     "' }}{% endif %}"},
    {"zephyr",
     "{% for message in messages %}\n"
     "{% if message['role'] == 'user' %}\n"
     "{{ '<|user|>\n"
     "' + message['content'] + eos_token }}\n"
     "{% elif message['role'] == 'system' %}\n"
     "{{ '<|system|>\n"
     "' + message['content'] + eos_token }}\n"
     "{% elif message['role'] == 'assistant' %}\n"
     "{{ '<|assistant|>\n"
     "'  + message['content'] + eos_token }}\n"
     "{% endif %}\n"
     "{% if loop.last and add_generation_prompt %}\n"
     "{{ '<|assistant|>' }}\n"
     "{% endif %}\n"
     "{% endfor %}"},
};

}  // namespace

Result<ChatTemplate> ChatTemplate::Parse(std::string_view source, std::string name) {
  auto parsed = jinja::Template::Parse(source);
  if (!parsed)
    return std::unexpected(std::move(parsed.error()).WithContext("chat template '" + name + "'"));
  return ChatTemplate(std::move(name), std::move(*parsed));
}

Result<std::string> ChatTemplate::Render(const ChatTemplateInput& input) const {
  const auto text = [](std::string_view s) { return jinja::Value::String(jinja::SanitizeUtf8(s)); };
  std::vector<jinja::Value> messages;
  messages.reserve(input.messages.size());
  for (const ChatMessage& message : input.messages) {
    messages.push_back(jinja::Value::MakeObject(
        {{"role", text(message.role)}, {"content", text(message.content)}}));
  }
  std::vector<std::pair<std::string, jinja::Value>> variables = {
      {"messages", jinja::Value::Array(std::move(messages))},
      {"add_generation_prompt", jinja::Value::Bool(input.add_generation_prompt)},
      {"bos_token", text(input.bos_token)},
      {"eos_token", text(input.eos_token)},
  };
  for (const auto& [key, value] : input.extra_vars) {
    for (const auto& existing : variables) {
      if (existing.first == key)
        return InvalidInput("chat template '" + name_ + "': variable '" + key + "' given twice");
    }
    variables.emplace_back(key, text(value));
  }
  auto rendered = template_.Render(variables);
  if (!rendered)
    return std::unexpected(
        std::move(rendered.error()).WithContext("chat template '" + name_ + "'"));
  return rendered;
}

Result<std::string> BuiltinChatTemplate(std::string_view name) {
  for (const Builtin& builtin : kBuiltins) {
    if (name == builtin.name) return std::string(builtin.source);
  }
  std::string known;
  for (const std::string& n : BuiltinChatTemplateNames()) known += (known.empty() ? "" : ", ") + n;
  return NotFound("no built-in chat template named '" + std::string(name) + "' (known: " + known +
                  ")");
}

std::vector<std::string> BuiltinChatTemplateNames() {
  std::vector<std::string> names;
  for (const Builtin& builtin : kBuiltins) names.emplace_back(builtin.name);
  return names;
}

}  // namespace kite
