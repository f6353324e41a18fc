#include "runtime/conversation.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <utility>

#include "base/atomic_output.h"
#include "base/json_util.h"
#include "base/mapped_file.h"
#include "runtime/prompt.h"

namespace kite {

Conversation::Conversation(const Engine& engine, Session& session, ChatTemplate chat_template,
                           std::string system)
    : engine_(engine),
      session_(session),
      template_(std::move(chat_template)),
      system_(std::move(system)) {}

Result<Session::GenerateResult> Conversation::Reply(std::string user,
                                                    const Session::GenerateOptions& options) {
  const size_t before = messages_.size();
  if (messages_.empty() && !system_.empty()) messages_.push_back({"system", system_});
  messages_.push_back({"user", std::move(user)});
  auto turn = NextChatTurnPrompt(engine_.tokenizer(), template_, messages_, ids_, rendered_);
  Result<Session::GenerateResult> result =
      turn ? session_.Generate(turn->ids, options) : std::unexpected(std::move(turn.error()));
  if (!result) {
    messages_.resize(before);  // the turn did not happen
    return result;
  }
  messages_.push_back({"assistant", result->text});
  if (result->stop_reason == "stop_string") {
    // The reply's ids run past its text: the next turn renders the conversation anew.
    ids_.clear();
  } else {
    ids_ = std::move(turn->ids);
    ids_.insert(ids_.end(), result->ids.begin(), result->ids.end());
  }
  rendered_ = std::move(turn->rendered);
  return result;
}

void Conversation::Reset() {
  session_.Reset();
  messages_.clear();
  ids_.clear();
  rendered_.clear();
}

Result<std::string> Conversation::RenderedBeforeLastReply(
    const std::vector<ChatMessage>& messages) const {
  if (messages.size() < 2 || messages.back().role != "assistant") return std::string();
  const std::vector<ChatMessage> before(messages.begin(), messages.end() - 1);
  return RenderChatPrompt(engine_.tokenizer(), template_, before);
}

Status Conversation::Save(const std::string& path) {
  const std::vector<int32_t>& fed = session_.history();
  if (ids_.size() > fed.size() && std::equal(fed.begin(), fed.end(), ids_.begin())) {
    KITE_RETURN_IF_ERROR(session_.Feed(std::span(ids_).subspan(fed.size())));
  }
  KITE_RETURN_IF_ERROR(session_.Save(path));
  nlohmann::json messages = nlohmann::json::array();
  for (const ChatMessage& m : messages_) {
    messages.push_back({{"role", m.role}, {"content", m.content}});
  }
  AtomicOutput out = KITE_TRY(AtomicOutput::Create(path + ".json", {engine_.config().source}));
  KITE_RETURN_IF_ERROR(
      out.Write(messages.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n"));
  return out.Commit();
}

Status Conversation::Load(const std::string& path) {
  const std::string text = KITE_TRY(ReadTextFile(path + ".json", kConfigFileLimit));
  const nlohmann::json messages = KITE_TRY(ParseJson(text, path + ".json"));
  if (!messages.is_array()) return InvalidInput(path + ".json: expected an array of messages");
  std::vector<ChatMessage> loaded;
  for (size_t i = 0; i < messages.size(); ++i) {
    const auto& m = messages[i];
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string() || !m.contains("content") ||
        !m["content"].is_string()) {
      return InvalidInput(path + ".json: message " + std::to_string(i) +
                          " needs string \"role\" and \"content\"");
    }
    loaded.push_back({m["role"], m["content"]});
  }
  std::string rendered = KITE_TRY(RenderedBeforeLastReply(loaded));
  KITE_RETURN_IF_ERROR(session_.Load(path));
  messages_ = std::move(loaded);
  ids_ = session_.history();
  rendered_ = std::move(rendered);
  return Ok();
}

}  // namespace kite
