// Chat templates: turning a conversation into the prompt text a model was trained on.
//
// Kite renders the Jinja chat templates that Hugging Face models ship (tokenizer_config.json's
// `chat_template`, GGUF's `tokenizer.chat_template`) exactly as Hugging Face's JavaScript
// implementation (@huggingface/jinja) does; testdata/chat_templates/goldens.json holds its
// output for the templates of the common model families.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "chat/jinja/template.h"

namespace kite {

struct ChatMessage {
  std::string role;  // "system", "user", "assistant", ...
  std::string content;
};

struct ChatTemplateInput {
  std::vector<ChatMessage> messages;
  bool add_generation_prompt = true;  // end with the header of the assistant's turn
  std::string bos_token, eos_token;
  // Further string variables some templates read, e.g. {"date_string", "26 Jul 2024"}.
  std::vector<std::pair<std::string, std::string>> extra_vars;
};

class ChatTemplate {
 public:
  // Parses a template; `name` (a model or file name) prefixes every error message. Syntax errors
  // name the line and column.
  static Result<ChatTemplate> Parse(std::string_view source, std::string name);

  // Renders a conversation. Errors: the template raised (raise_exception, e.g. roles that do
  // not alternate), used a value of the wrong type, or exceeded the render limits.
  Result<std::string> Render(const ChatTemplateInput& input) const;

  const std::string& name() const { return name_; }

 private:
  ChatTemplate(std::string name, jinja::Template tmpl)
      : name_(std::move(name)), template_(std::move(tmpl)) {}

  std::string name_;
  jinja::Template template_;
};

// Built-in templates for models that ship none, chosen with `--chat-template NAME`: the
// official templates of each family, byte for byte.
Result<std::string> BuiltinChatTemplate(std::string_view name);
std::vector<std::string> BuiltinChatTemplateNames();

}  // namespace kite
