// `kite chat -m MODEL`: an interactive multi-turn conversation in the model's chat template.
// The conversation's KV cache holds the ids as they were processed: each reply as generated,
// then only what the template writes for the new turn (NextChatTurnPrompt), so only the new
// turn is computed. Ctrl-C during a reply stops it and returns to the prompt.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "base/atomic_output.h"
#include "base/mapped_file.h"
#include "cli/command.h"
#include "cli/generation_flags.h"
#include "cli/prompt.h"
#include "format/json_util.h"
#include "runtime/session.h"

namespace kite::cli {

namespace {

constexpr const char* kChatHelp =
    "commands: /reset (forget the conversation), /save FILE, /load FILE (KV cache and history; the "
    "messages go to FILE.json), /stats, /quit. Ctrl-C stops a reply (what it wrote stays in the "
    "conversation); at the prompt it ends kite\n";

struct ChatState {
  std::vector<ChatMessage> messages;
  // The conversation's ids as processed: prompts, then each reply as generated (its last id may
  // not be fed yet). Empty when the next turn must render the conversation anew.
  std::vector<int32_t> ids;
  std::string rendered;  // the template's text up to the last reply (ChatTurnPrompt::rendered)
  Session::GenerateResult last;
};

// Set by Ctrl-C while a reply is generated; the token callback reads it.
std::atomic<bool> g_stop_reply{false};
static_assert(std::atomic<bool>::is_always_lock_free);  // safe to write in a signal handler

void StopReply(int) { g_stop_reply.store(true); }

// Ctrl-C stops the reply instead of the process for as long as this lives; at the prompt it
// ends kite as before (llama.cpp's habit: the first Ctrl-C stops the reply, the next one exits).
class StopReplyOnInterrupt {
 public:
  StopReplyOnInterrupt() {
    g_stop_reply.store(false);
    struct sigaction action = {};
    action.sa_handler = StopReply;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    sigaction(SIGINT, &action, &previous_);
  }
  ~StopReplyOnInterrupt() { sigaction(SIGINT, &previous_, nullptr); }
  StopReplyOnInterrupt(const StopReplyOnInterrupt&) = delete;
  StopReplyOnInterrupt& operator=(const StopReplyOnInterrupt&) = delete;

 private:
  struct sigaction previous_ = {};
};

Result<Session::GenerateResult> GenerateReply(Session& session, std::span<const int32_t> prompt,
                                              const Session::GenerateOptions& options) {
  StopReplyOnInterrupt interrupt;
  return session.Generate(prompt, options);
}

// The conversation before the last reply as the template writes it, for the next turn's check
// that earlier turns are written as before ("" when the messages do not end with a reply).
Result<std::string> RenderedBeforeLastReply(const Tokenizer& tokenizer,
                                            const ChatTemplate& chat_template,
                                            const std::vector<ChatMessage>& messages) {
  if (messages.size() < 2 || messages.back().role != "assistant") return std::string();
  const std::vector<ChatMessage> before(messages.begin(), messages.end() - 1);
  return RenderChatPrompt(tokenizer, chat_template, before);
}

Status SaveChat(Session& session, const Engine& engine, const ChatState& state,
                const std::string& path) {
  // The file holds the conversation's ids as processed: feed the reply's last id if it is not.
  const std::vector<int32_t>& fed = session.history();
  if (state.ids.size() > fed.size() && std::equal(fed.begin(), fed.end(), state.ids.begin())) {
    KITE_RETURN_IF_ERROR(session.Feed(std::span(state.ids).subspan(fed.size())));
  }
  KITE_RETURN_IF_ERROR(session.Save(path));
  nlohmann::json messages = nlohmann::json::array();
  for (const ChatMessage& m : state.messages) messages.push_back({{"role", m.role}, {"content", m.content}});
  AtomicOutput out = KITE_TRY(AtomicOutput::Create(path + ".json", {engine.config().source}));
  KITE_RETURN_IF_ERROR(
      out.Write(messages.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n"));
  return out.Commit();
}

Status LoadChat(Session& session, const Tokenizer& tokenizer, const ChatTemplate& chat_template,
                ChatState& state, const std::string& path) {
  const std::string text = KITE_TRY(ReadTextFile(path + ".json", kConfigFileLimit));
  const nlohmann::json messages = KITE_TRY(ParseJson(text, path + ".json"));
  std::vector<ChatMessage> loaded;
  for (size_t i = 0; messages.is_array() && i < messages.size(); ++i) {
    const auto& m = messages[i];
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string() || !m.contains("content") ||
        !m["content"].is_string()) {
      return InvalidInput(path + ".json: message " + std::to_string(i) + " needs string \"role\" and \"content\"");
    }
    loaded.push_back({m["role"], m["content"]});
  }
  if (!messages.is_array()) return InvalidInput(path + ".json: expected an array of messages");
  const std::string rendered = KITE_TRY(RenderedBeforeLastReply(tokenizer, chat_template, loaded));
  KITE_RETURN_IF_ERROR(session.Load(path));
  state = ChatState{};
  state.messages = std::move(loaded);
  state.ids = session.history();
  state.rendered = rendered;
  return Ok();
}

void PrintStats(const Session& session, const Engine& engine, const ChatState& state) {
  const auto& r = state.last;
  std::fprintf(stderr,
               "context %d/%d tokens | last turn: prompt %d (%d reused, %d computed), %.1f tok/s "
               "prefill, %zu generated, %.1f tok/s decode, stop: %s\n",
               session.n_past(), engine.context_length(), r.prompt_tokens, r.reused_tokens,
               r.prefill_tokens,
               r.prefill_seconds > 0 ? r.prefill_tokens / r.prefill_seconds : 0.0, r.ids.size(),
               r.decode_seconds > 0 ? r.decode_tokens / r.decode_seconds : 0.0,
               r.stop_reason.empty() ? "-" : r.stop_reason.c_str());
}

// Handles a /command; returns false for /quit.
bool HandleCommand(const std::string& line, Session& session, Engine& engine,
                   const ChatTemplate& chat_template, ChatState& state) {
  const size_t space = line.find(' ');
  const std::string name = line.substr(0, space);
  const std::string arg = space == std::string::npos ? "" : line.substr(space + 1);
  if (name == "/quit" || name == "/exit") return false;
  Status status = Ok();
  if (name == "/reset") {
    session.Reset();
    state = ChatState{};
    std::fprintf(stderr, "conversation reset\n");
  } else if (name == "/save" && !arg.empty()) {
    status = SaveChat(session, engine, state, arg);
    if (status) std::fprintf(stderr, "saved %d tokens to %s\n", session.n_past(), arg.c_str());
  } else if (name == "/load" && !arg.empty()) {
    status = LoadChat(session, engine.tokenizer(), chat_template, state, arg);
    if (status) std::fprintf(stderr, "loaded %d tokens from %s\n", session.n_past(), arg.c_str());
  } else if (name == "/stats") {
    PrintStats(session, engine, state);
  } else {
    std::fprintf(stderr, "%s", kChatHelp);
  }
  if (!status) std::fprintf(stderr, "kite: %s\n", status.error().message.c_str());
  return true;
}

Status Chat(const GenerationFlags& flags, const std::string& system) {
  const RunSettings config = KITE_TRY(flags.Resolve());
  double load_seconds = 0;
  auto engine = KITE_TRY(LoadEngine(config, &load_seconds));
  const ChatTemplate chat_template = KITE_TRY(SelectChatTemplate(engine->tokenizer(), config.chat_template));
  const bool interactive = ::isatty(STDIN_FILENO);
  if (interactive) std::fprintf(stderr, "loaded %s in %.2f s. %s", config.model.c_str(), load_seconds, kChatHelp);

  Session session(*engine);
  ChatState state;
  Session::GenerateOptions generate;
  generate.max_tokens = config.n_predict;
  generate.ignore_eos = config.ignore_eos;
  generate.stop_strings = config.stop;
  generate.sampler = config.sampler;
  generate.on_token = [](int32_t, std::string_view text) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
    return !g_stop_reply.load();
  };
  std::string line;
  while (true) {
    if (interactive) std::fprintf(stderr, "> ");
    if (!std::getline(std::cin, line)) break;
    if (line.empty()) continue;
    if (line[0] == '/') {
      if (!HandleCommand(line, session, *engine, chat_template, state)) break;
      continue;
    }
    if (state.messages.empty() && !system.empty()) state.messages.push_back({"system", system});
    state.messages.push_back({"user", line});
    auto turn = NextChatTurnPrompt(engine->tokenizer(), chat_template, state.messages, state.ids,
                                   state.rendered);
    auto result =
        turn ? GenerateReply(session, turn->ids, generate) : std::unexpected(turn.error());
    if (!result) {
      state.messages.pop_back();  // the turn did not happen
      std::fprintf(stderr, "kite: %s\n", result.error().message.c_str());
      continue;
    }
    std::printf("\n");
    // A reply stopped by Ctrl-C stays in the conversation as far as it went, like any other.
    state.messages.push_back({"assistant", result->text});
    if (result->stop_reason == "stop_string") {
      // The reply's ids run past its text: the next turn renders the conversation anew.
      state.ids.clear();
    } else {
      state.ids = std::move(turn->ids);
      state.ids.insert(state.ids.end(), result->ids.begin(), result->ids.end());
    }
    state.rendered = std::move(turn->rendered);
    state.last = std::move(*result);
  }
  return Ok();
}

}  // namespace

void AddChatCommand(CLI::App& app, int* exit_code) {
  CLI::App* command = app.add_subcommand(
      "chat", "Talk with a model, turn by turn, in its chat template (one message per line on stdin)");
  auto flags = std::make_shared<GenerationFlags>(command);
  auto system = std::make_shared<std::string>();
  command->add_option("--system", *system, "A system message to start the conversation");
  command->footer(kChatHelp);
  command->callback([flags, system, exit_code] {
    if (auto status = Chat(*flags, *system); !status) *exit_code = ReportError(status.error());
  });
}

}  // namespace kite::cli
