// `kite chat -m MODEL`: an interactive multi-turn conversation in the model's chat template
// (runtime/conversation.h keeps it, so that each turn computes only itself). Ctrl-C during a
// reply stops it and returns to the prompt.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <functional>
#include <iostream>
#include <memory>

#include "cli/command.h"
#include "cli/generation_flags.h"
#include "cli/server_flags.h"
#include "cli/speculative_cli.h"
#include "runtime/conversation.h"
#include "runtime/prompt.h"
#include "runtime/run_config.h"
#include "runtime/session.h"

namespace kite::cli {

namespace {

constexpr const char* kChatHelp =
    "commands: /reset (forget the conversation), /save FILE, /load FILE (KV cache and history; the "
    "messages go to FILE.json), /stats, /quit. Ctrl-C stops a reply (what it wrote stays in the "
    "conversation); at the prompt it ends kite\n";

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

Result<Session::GenerateResult> GenerateReply(Conversation& conversation, const std::string& line,
                                              const Session::GenerateOptions& options) {
  StopReplyOnInterrupt interrupt;
  return conversation.Reply(line, options);
}

void PrintStats(const Session& session, const Engine& engine, const Session::GenerateResult& r) {
  std::fprintf(stderr,
               "context %d/%d tokens | last turn: prompt %d (%d reused, %d computed), %.1f tok/s "
               "prefill, %zu generated, %.1f tok/s decode, stop: %s\n",
               session.n_past(), engine.context_length(), r.prompt_tokens, r.reused_tokens,
               r.prefill_tokens,
               r.prefill_seconds > 0 ? r.prefill_tokens / r.prefill_seconds : 0.0, r.ids.size(),
               r.decode_seconds > 0 ? r.decode_tokens / r.decode_seconds : 0.0,
               r.stop_reason.empty() ? "-" : r.stop_reason.c_str());
}

// Handles a /command; returns false for /quit. `last` is the last turn's result (/stats).
bool HandleCommand(const std::string& line, const Session& session, const Engine& engine,
                   Conversation& conversation, Session::GenerateResult& last) {
  const size_t space = line.find(' ');
  const std::string name = line.substr(0, space);
  const std::string arg = space == std::string::npos ? "" : line.substr(space + 1);
  if (name == "/quit" || name == "/exit") return false;
  Status status = Ok();
  if (name == "/reset") {
    conversation.Reset();
    last = {};
    std::fprintf(stderr, "conversation reset\n");
  } else if (name == "/save" && !arg.empty()) {
    status = conversation.Save(arg);
    if (status) std::fprintf(stderr, "saved %d tokens to %s\n", session.n_past(), arg.c_str());
  } else if (name == "/load" && !arg.empty()) {
    status = conversation.Load(arg);
    if (status) {
      last = {};
      std::fprintf(stderr, "loaded %d tokens from %s\n", session.n_past(), arg.c_str());
    }
  } else if (name == "/stats") {
    PrintStats(session, engine, last);
  } else {
    std::fprintf(stderr, "%s", kChatHelp);
  }
  if (!status) std::fprintf(stderr, "kite: %s\n", status.error().message.c_str());
  return true;
}

// Reads stdin a line at a time (with a prompt when it is a terminal): a "/command" goes to
// on_command, which returns false to quit; any other non-empty line is a message.
void ReadTurns(bool interactive, const std::function<bool(const std::string&)>& on_command,
               const std::function<void(const std::string&)>& on_message) {
  std::string line;
  while (true) {
    if (interactive) std::fprintf(stderr, "> ");
    if (!std::getline(std::cin, line)) break;
    if (line.empty()) continue;
    if (line[0] == '/') {
      if (!on_command(line)) break;
      continue;
    }
    on_message(line);
  }
}

// The conversation on a server: each turn sends the messages so far to /v1/chat/completions
// (the server's prefix cache keeps the earlier turns' KV), the reply streams back and joins them.
Status ChatOnServer(const RunSettings& config, const ServerFlags& server, const std::string& system) {
  const ServerClient client = KITE_TRY(server.Client());
  const bool interactive = ::isatty(STDIN_FILENO);
  if (interactive) std::fprintf(stderr, "talking to %s. %s", client.address().Name().c_str(), kChatHelp);
  nlohmann::json opening = nlohmann::json::array();
  if (!system.empty()) opening.push_back({{"role", "system"}, {"content", system}});
  nlohmann::json messages = opening;
  StreamOutcome last;
  const auto on_command = [&](const std::string& line) {
    const std::string name = line.substr(0, line.find(' '));
    if (name == "/quit" || name == "/exit") return false;
    if (name == "/reset") {
      messages = opening;
      std::fprintf(stderr, "conversation reset\n");
    } else if (name == "/stats") {
      std::fprintf(stderr, "server %s | last turn: prompt %lld tokens, %lld generated, first token %.3f s, stop: %s\n",
                   client.address().Name().c_str(), static_cast<long long>(last.prompt_tokens),
                   static_cast<long long>(last.completion_tokens), last.first_token_seconds,
                   last.finish_reason.empty() ? "-" : last.finish_reason.c_str());
    } else if (name == "/save" || name == "/load") {
      std::fprintf(stderr, "kite: %s needs a local model (the KV cache is the server's)\n", name.c_str());
    } else {
      std::fprintf(stderr, "%s", kChatHelp);
    }
    return true;
  };
  ReadTurns(interactive, on_command, [&](const std::string& line) {
    messages.push_back({{"role", "user"}, {"content", line}});
    nlohmann::json body = SamplingFields(config);
    body["messages"] = messages;
    StopReplyOnInterrupt interrupt;
    auto reply = client.Stream("/v1/chat/completions", std::move(body), [](std::string_view text) {
      std::fwrite(text.data(), 1, text.size(), stdout);
      std::fflush(stdout);
      return true;
    }, &g_stop_reply);
    if (!reply) {
      messages.erase(messages.end() - 1);  // the turn did not happen
      std::fprintf(stderr, "kite: %s\n", reply.error().message.c_str());
      return;
    }
    std::printf("\n");
    // A reply stopped by Ctrl-C stays in the conversation as far as it went, as locally.
    messages.push_back({{"role", "assistant"}, {"content", reply->text}});
    last = std::move(*reply);
  });
  return Ok();
}

Status Chat(const GenerationFlags& flags, const ServerFlags& server, const std::string& system) {
  const RunSettings config = KITE_TRY(flags.Resolve(/*need_model=*/!server.given()));
  if (server.given()) return ChatOnServer(config, server, system);
  double load_seconds = 0;
  auto engine = KITE_TRY(LoadEngine(config, &load_seconds));
  const ChatTemplate chat_template = KITE_TRY(SelectChatTemplate(engine->tokenizer(), config.chat_template));
  const bool interactive = ::isatty(STDIN_FILENO);
  if (interactive) std::fprintf(stderr, "loaded %s in %.2f s. %s", config.model.c_str(), load_seconds, kChatHelp);

  const Speculation speculation = KITE_TRY(StartSpeculation(config, *engine, &load_seconds));
  Session session(*engine);
  Conversation conversation(*engine, session, chat_template, system);
  Session::GenerateResult last;
  Session::GenerateOptions generate = GenerateOptionsOf(config);
  speculation.Apply(&generate);
  generate.on_token = [](int32_t, std::string_view text) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
    return !g_stop_reply.load();
  };
  const auto on_command = [&](const std::string& line) {
    return HandleCommand(line, session, *engine, conversation, last);
  };
  ReadTurns(interactive, on_command, [&](const std::string& line) {
    auto result = GenerateReply(conversation, line, generate);
    if (!result) {
      std::fprintf(stderr, "kite: %s\n", result.error().message.c_str());
      return;
    }
    std::printf("\n");
    // A reply stopped by Ctrl-C stays in the conversation as far as it went, like any other.
    last = std::move(*result);
  });
  return Ok();
}

}  // namespace

void AddChatCommand(CLI::App& app, int* exit_code) {
  CLI::App* command = app.add_subcommand(
      "chat", "Talk with a model, turn by turn, in its chat template (one message per line on stdin)");
  auto flags = std::make_shared<GenerationFlags>(command);
  auto system = std::make_shared<std::string>();
  command->add_option("--system", *system, "A system message to start the conversation");
  auto server = std::make_shared<ServerFlags>();
  server->Add(command);
  command->footer(kChatHelp);
  command->callback([flags, server, system, exit_code] {
    if (auto status = Chat(*flags, *server, *system); !status) *exit_code = ReportError(status.error());
  });
}

}  // namespace kite::cli
