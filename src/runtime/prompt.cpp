#include "runtime/prompt.h"

#include <algorithm>

#include "tokenizer/pipeline.h"

namespace kite {

Result<std::vector<int32_t>> RawPromptIds(const Tokenizer& tokenizer, const std::string& text) {
  std::vector<int32_t> ids = KITE_TRY(tokenizer.Encode(text, /*add_special=*/true));
  while (!ids.empty() && tokenizer.IsEos(ids.back())) ids.pop_back();
  return ids;
}

Result<std::string> DecodeIds(const Tokenizer& tokenizer, std::span<const int32_t> ids,
                              bool keep_special) {
  if (!keep_special) {  // what Encode(text, add_special=true) put around the text
    const std::vector<int32_t>& prefix = tokenizer.pipeline().prefix_ids;
    const std::vector<int32_t>& suffix = tokenizer.pipeline().suffix_ids;
    if (ids.size() >= prefix.size() && std::equal(prefix.begin(), prefix.end(), ids.begin())) {
      ids = ids.subspan(prefix.size());
    }
    if (ids.size() >= suffix.size() &&
        std::equal(suffix.begin(), suffix.end(), ids.end() - suffix.size())) {
      ids = ids.first(ids.size() - suffix.size());
    }
  }
  return tokenizer.Decode(ids);
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

namespace {

// Stands for the last reply while rendering the next turn: where the template writes it, the
// reply's ids as generated go. Plain text, so that filters like trim leave it alone.
constexpr std::string_view kReplyMarker = "@@kite-reply@@";

Result<std::vector<int32_t>> RenderedIds(const Tokenizer& tokenizer, std::string_view text) {
  std::vector<int32_t> ids;
  const int32_t bos = tokenizer.bos_id();
  const std::string_view bos_text = tokenizer.TokenText(bos);  // "" when there is none
  if (!bos_text.empty() && text.starts_with(bos_text)) {
    ids.push_back(bos);
    text.remove_prefix(bos_text.size());
  }
  const std::vector<int32_t> rest = KITE_TRY(tokenizer.Encode(text, /*add_special=*/false));
  ids.insert(ids.end(), rest.begin(), rest.end());
  return ids;
}

bool OnlySpaces(std::string_view text) {
  return text.find_first_not_of(" \t\r\n") == std::string_view::npos;
}

}  // namespace

Result<std::string> RenderChatPrompt(const Tokenizer& tokenizer, const ChatTemplate& chat_template,
                                     const std::vector<ChatMessage>& messages) {
  ChatTemplateInput input;
  input.messages = messages;
  input.add_generation_prompt = true;
  const int32_t bos = tokenizer.bos_id();
  if (bos >= 0) input.bos_token = std::string(tokenizer.TokenText(bos));
  const std::span<const int32_t> eos = tokenizer.eos_ids();
  if (!eos.empty()) input.eos_token = std::string(tokenizer.TokenText(eos[0]));
  return chat_template.Render(input);
}

Result<std::vector<int32_t>> ChatPromptIds(const Tokenizer& tokenizer, const ChatTemplate& chat_template,
                                           const std::vector<ChatMessage>& messages) {
  return RenderedIds(tokenizer, KITE_TRY(RenderChatPrompt(tokenizer, chat_template, messages)));
}

Result<ChatTurnPrompt> NextChatTurnPrompt(const Tokenizer& tokenizer,
                                          const ChatTemplate& chat_template,
                                          const std::vector<ChatMessage>& messages,
                                          std::span<const int32_t> history,
                                          std::string_view rendered) {
  ChatTurnPrompt turn;
  turn.rendered = KITE_TRY(RenderChatPrompt(tokenizer, chat_template, messages));
  const size_t n = messages.size();
  if (!history.empty() && !rendered.empty() && n >= 2 && messages[n - 2].role == "assistant") {
    std::vector<ChatMessage> marked = messages;
    marked[n - 2].content = std::string(kReplyMarker);
    const std::string text = KITE_TRY(RenderChatPrompt(tokenizer, chat_template, marked));
    const size_t at = text.find(kReplyMarker);
    // The earlier turns must be written as before; between them and the reply the template may
    // put white space that the generated reply carries itself (the demo's "assistant: ").
    if (at != std::string::npos && text.find(kReplyMarker, at + 1) == std::string::npos &&
        at >= rendered.size() && text.starts_with(rendered) &&
        OnlySpaces(std::string_view(text).substr(rendered.size(), at - rendered.size()))) {
      const std::string_view after = std::string_view(text).substr(at + kReplyMarker.size());
      const std::vector<int32_t> tail = KITE_TRY(tokenizer.EncodeContinuation(after));
      turn.ids.assign(history.begin(), history.end());
      turn.ids.insert(turn.ids.end(), tail.begin(), tail.end());
      turn.new_tokens = static_cast<int32_t>(tail.size());
      return turn;
    }
  }
  turn.ids = KITE_TRY(RenderedIds(tokenizer, turn.rendered));
  turn.new_tokens = static_cast<int32_t>(turn.ids.size());
  return turn;
}

}  // namespace kite
