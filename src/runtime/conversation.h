// Conversation: a multi-turn chat on one Session — the list of messages and the ids the
// session's KV cache holds for them, saved and loaded with it. Each reply is kept as it was
// generated and a new turn appends only what the template writes after it (NextChatTurnPrompt),
// so only the new turn is computed. `kite chat` keeps its conversation here, as a server or the
// C API would.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "chat/chat_template.h"
#include "runtime/engine.h"
#include "runtime/session.h"

namespace kite {

class Conversation {
 public:
  // The engine and the session must outlive the conversation. `system`: a system message that
  // opens the conversation (again after Reset); "" for none.
  Conversation(const Engine& engine, Session& session, ChatTemplate chat_template,
               std::string system = "");

  // Adds `user` as the next message and generates the reply, which joins the conversation as
  // far as it went (also when on_token stopped it). On an error the turn did not happen: the
  // messages are as before.
  Result<Session::GenerateResult> Reply(std::string user, const Session::GenerateOptions& options);

  // Forgets the conversation and the session's history.
  void Reset();

  // The session's history and KV cache in `path` (Session::Save), the messages in `path`.json.
  // A reply whose last id was not fed yet (cut by max_tokens or on_token) is fed first, so that
  // the file holds the conversation's ids.
  Status Save(const std::string& path);
  // Both files back; a messages file that is not an array of {"role", "content"} strings is
  // refused, naming the message, and nothing is loaded.
  Status Load(const std::string& path);

  const std::vector<ChatMessage>& messages() const { return messages_; }

 private:
  // The conversation before the last reply as the template writes it, for the next turn's
  // check that earlier turns are written as before ("" when the messages do not end with one).
  Result<std::string> RenderedBeforeLastReply(const std::vector<ChatMessage>& messages) const;

  const Engine& engine_;
  Session& session_;
  ChatTemplate template_;
  std::string system_;
  std::vector<ChatMessage> messages_;
  // The conversation's ids as processed: prompts, then each reply as generated (its last id may
  // not be fed yet). Empty when the next turn must render the conversation anew.
  std::vector<int32_t> ids_;
  std::string rendered_;  // the template's text up to the last reply (ChatTurnPrompt::rendered)
};

}  // namespace kite
