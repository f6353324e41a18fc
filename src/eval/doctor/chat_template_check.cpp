// tokenizer.chat_template: the model's chat template renders, and the prompt it writes for a
// reply ends exactly where the assistant's reply starts. Rendered twice, a conversation ending
// with the user's turn (with the generation prompt) must be the start of the same conversation
// with the assistant's reply, followed by at most white space and then the reply. A template
// without the assistant's header (the ChatML "<|im_start|>assistant\n", Llama 3's
// "<|start_header_id|>assistant<|end_header_id|>\n\n", ...) leaves the model to write it, or to
// go on with the user's turn: replies that talk to themselves. Llama 2's "[/INST]" templates,
// where the reply follows the user's turn directly, pass. The markers the template writes
// ("<|im_start|>", "<start_of_turn>", "</s>") must be tokens of the tokenizer: one that is not
// means the template, or the tokenizer, is another model's, and the model would read the marker
// as a string of text pieces it was never trained on.
#include <algorithm>
#include <string>
#include <vector>

#include "eval/doctor/checks.h"
#include "eval/doctor/format.h"
#include "runtime/prompt.h"
#include "tokenizer/pipeline.h"

namespace kite::doctor {

namespace {

constexpr char kId[] = "tokenizer.chat_template";

// The special-token-like markers in `text`: "<|...|>", and "<name>" / "</name>" of letters, digits
// and underscores (what chat templates of Llama, Mistral, Qwen, Gemma and Phi write), each once.
std::vector<std::string> Markers(std::string_view text) {
  std::vector<std::string> markers;
  for (size_t open = text.find('<'); open != std::string_view::npos; open = text.find('<', open + 1)) {
    const size_t close = text.find('>', open + 1);
    if (close == std::string_view::npos) break;
    const std::string_view inside = text.substr(open + 1, close - open - 1);
    const bool piped = inside.size() >= 2 && inside.front() == '|' && inside.back() == '|' &&
                       inside.find_first_of(" \t\n<") == std::string_view::npos;
    std::string_view name = inside.starts_with('/') ? inside.substr(1) : inside;
    const bool tag = !name.empty() && name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") ==
                                          std::string_view::npos;
    const std::string marker(text.substr(open, close - open + 1));
    if ((piped || tag) && std::find(markers.begin(), markers.end(), marker) == markers.end()) markers.push_back(marker);
  }
  return markers;
}
constexpr char kUser[] = "What is the capital of France?";
constexpr char kReply[] = "KiteDoctorReplyMarker";


}  // namespace

CheckResult CheckChatTemplate(const Subject& subject) {
  if (!subject.tokenizer) return Skipped(kId, "the tokenizer did not load (tokenizer.vocab)");
  const Tokenizer& tokenizer = *subject.tokenizer;
  if (tokenizer.chat_template().empty()) {
    return Finding(kId, CheckStatus::kWarn, "the model has no chat template (a base model?)",
                   "for kite chat, give --chat-template NAME (kite chat --help lists the built-in ones) "
                   "or add the template its family uses to tokenizer_config.json");
  }
  auto chat_template = SelectChatTemplate(tokenizer, "");
  if (!chat_template) {
    return Finding(kId, CheckStatus::kFail, "the chat template does not parse: " + chat_template.error().message,
                   "use the tokenizer_config.json published with the model");
  }
  const std::vector<ChatMessage> asking = {{"user", kUser}};
  const std::vector<ChatMessage> answered = {{"user", kUser}, {"assistant", kReply}};
  auto prompt = RenderChatPrompt(tokenizer, *chat_template, asking);
  if (!prompt) {
    return Finding(kId, CheckStatus::kFail, "the chat template does not render a user turn: " + prompt.error().message,
                   "use the tokenizer_config.json published with the model");
  }
  auto conversation = RenderChatPrompt(tokenizer, *chat_template, answered);
  if (!conversation) {
    return Finding(kId, CheckStatus::kFail,
                   "the chat template does not render an assistant's reply: " + conversation.error().message,
                   "use the tokenizer_config.json published with the model");
  }
  std::string foreign;
  for (const std::string& marker : Markers(*conversation)) {
    if (tokenizer.pipeline().vocab.Find(marker) < 0) foreign += (foreign.empty() ? "" : ", ") + marker;
  }
  if (!foreign.empty()) {
    CheckResult result = Finding(kId, CheckStatus::kFail,
                                 "the chat template writes " + foreign + ", which the tokenizer has no token for: the "
                                 "template or the tokenizer is another model's",
                                 "use the tokenizer_config.json (chat_template) and tokenizer files published with "
                                 "the weights, or --chat-template NAME of the model's family");
    result.data = {{"unknown_markers", foreign}};
    return result;
  }
  const size_t reply_at = conversation->find(kReply);
  // What the template writes after the user's words: the end of the user's turn and the header.
  const size_t user_at = prompt->rfind(kUser);
  const std::string tail = user_at == std::string::npos ? *prompt : prompt->substr(user_at + sizeof(kUser) - 1);
  nlohmann::ordered_json data = {{"after_user", tail}};
  CheckResult result;
  if (reply_at == std::string::npos) {
    result = Finding(kId, CheckStatus::kWarn, "the chat template drops the assistant's reply from the history",
                     "check the template: earlier replies are not shown to the model");
  } else if (!conversation->starts_with(*prompt) || reply_at < prompt->size()) {
    result = Finding(kId, CheckStatus::kWarn,
                     "the prompt for a reply is not how the template writes a conversation with the reply "
                     "(a template that rewrites earlier turns)",
                     "kite chat then recomputes the whole conversation each turn; nothing else to do");
  } else {
    const std::string_view between =
        std::string_view(*conversation).substr(prompt->size(), reply_at - prompt->size());
    data["before_reply"] = std::string(between);
    if (between.find_first_not_of(" \t\r\n") != std::string_view::npos) {
      result = Finding(kId, CheckStatus::kFail,
                       "the prompt ends before the assistant's header: a reply is written after \"" +
                           Printable(between) + "\", which the generation prompt leaves out",
                       "render the assistant's header when add_generation_prompt is true (e.g. "
                       "{% if add_generation_prompt %}" + Printable(between) +
                           "{% endif %} at the end of the template), or use --chat-template NAME");
    } else {
      result = Finding(kId, CheckStatus::kPass,
                       "renders; after the user's words the prompt ends with \"" + Printable(tail) +
                           "\", where the reply starts");
    }
  }
  result.data = std::move(data);
  return result;
}

}  // namespace kite::doctor
