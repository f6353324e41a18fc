#include "cli/prompt.h"

namespace kite::cli {

Result<std::vector<int32_t>> RawPromptIds(const Tokenizer& tokenizer, const std::string& text) {
  std::vector<int32_t> ids = KITE_TRY(tokenizer.Encode(text, /*add_special=*/true));
  while (!ids.empty() && tokenizer.IsEos(ids.back())) ids.pop_back();
  return ids;
}

Result<ChatTemplate> SelectChatTemplate(const Tokenizer& tokenizer, const std::string& builtin_name) {
  if (!builtin_name.empty()) {
    const std::string source = KITE_TRY(BuiltinChatTemplate(builtin_name));
    return ChatTemplate::Parse(source, "built-in template " + builtin_name);
  }
  if (tokenizer.chat_template().empty()) {
    std::string names;
    for (const std::string& name : BuiltinChatTemplateNames()) names += (names.empty() ? "" : ", ") + name;
    return InvalidInput("the model has no chat template; choose a built-in one with --chat-template NAME (" +
                        names + ")");
  }
  return ChatTemplate::Parse(tokenizer.chat_template(), "the model's chat template");
}

Result<std::vector<int32_t>> ChatPromptIds(const Tokenizer& tokenizer, const ChatTemplate& chat_template,
                                           const std::vector<ChatMessage>& messages) {
  ChatTemplateInput input;
  input.messages = messages;
  input.add_generation_prompt = true;
  const int32_t bos = tokenizer.bos_id();
  if (bos >= 0) input.bos_token = std::string(tokenizer.TokenText(bos));
  if (!tokenizer.eos_ids().empty()) input.eos_token = std::string(tokenizer.TokenText(tokenizer.eos_ids()[0]));
  std::string text = KITE_TRY(chat_template.Render(input));
  std::vector<int32_t> ids;
  if (!input.bos_token.empty() && text.starts_with(input.bos_token)) {
    ids.push_back(bos);
    text.erase(0, input.bos_token.size());
  }
  const std::vector<int32_t> rest = KITE_TRY(tokenizer.Encode(text, /*add_special=*/false));
  ids.insert(ids.end(), rest.begin(), rest.end());
  return ids;
}

}  // namespace kite::cli
