// `kite chat -m MODEL`: an interactive multi-turn conversation in the model's chat template.
// Each turn re-renders the whole conversation; the session reuses the KV cache of the longest
// common prefix, so only the new turn is computed.
#include <unistd.h>

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
    "messages go to FILE.json), /stats, /quit\n";

struct ChatState {
  std::vector<ChatMessage> messages;
  Session::GenerateResult last;
};

Status SaveChat(const Session& session, const Engine& engine, const ChatState& state,
                const std::string& path) {
  KITE_RETURN_IF_ERROR(session.Save(path));
  nlohmann::json messages = nlohmann::json::array();
  for (const ChatMessage& m : state.messages) messages.push_back({{"role", m.role}, {"content", m.content}});
  AtomicOutput out = KITE_TRY(AtomicOutput::Create(path + ".json", {engine.spec().source}));
  KITE_RETURN_IF_ERROR(
      out.Write(messages.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n"));
  return out.Commit();
}

Status LoadChat(Session& session, ChatState& state, const std::string& path) {
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
  KITE_RETURN_IF_ERROR(session.Load(path));
  state.messages = std::move(loaded);
  return Ok();
}

void PrintStats(const Session& session, const Engine& engine, const ChatState& state) {
  const auto& r = state.last;
  std::fprintf(stderr,
               "context %d/%d tokens | last turn: prompt %d (%d reused), %.1f tok/s prefill, "
               "%zu generated, %.1f tok/s decode, stop: %s\n",
               session.n_past(), engine.context_length(), r.prompt_tokens, r.reused_tokens,
               r.prefill_seconds > 0 ? r.prefill_tokens / r.prefill_seconds : 0.0, r.ids.size(),
               r.decode_seconds > 0 ? r.decode_tokens / r.decode_seconds : 0.0,
               r.stop_reason.empty() ? "-" : r.stop_reason.c_str());
}

// Handles a /command; returns false for /quit.
bool HandleCommand(const std::string& line, Session& session, Engine& engine, ChatState& state) {
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
    status = LoadChat(session, state, arg);
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
  const RunConfig config = KITE_TRY(flags.Resolve());
  double load_seconds = 0;
  auto engine = KITE_TRY(LoadEngine(config, &load_seconds));
  const ChatTemplate chat_template = KITE_TRY(SelectChatTemplate(engine->tokenizer(), config.chat_template));
  const bool interactive = ::isatty(STDIN_FILENO);
  if (interactive) std::fprintf(stderr, "loaded %s in %.2f s. %s", config.model.c_str(), load_seconds, kChatHelp);

  Session session(*engine);
  ChatState state;
  Session::GenerateOptions generate;
  generate.max_tokens = config.n_predict;
  generate.stop_strings = config.stop;
  generate.sampler = config.sampler;
  generate.on_token = [](int32_t, std::string_view text) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
    return true;
  };
  std::string line;
  while (true) {
    if (interactive) std::fprintf(stderr, "> ");
    if (!std::getline(std::cin, line)) break;
    if (line.empty()) continue;
    if (line[0] == '/') {
      if (!HandleCommand(line, session, *engine, state)) break;
      continue;
    }
    if (state.messages.empty() && !system.empty()) state.messages.push_back({"system", system});
    state.messages.push_back({"user", line});
    auto ids = ChatPromptIds(engine->tokenizer(), chat_template, state.messages);
    auto result = ids ? session.Generate(*ids, generate) : std::unexpected(ids.error());
    if (!result) {
      state.messages.pop_back();  // the turn did not happen
      std::fprintf(stderr, "kite: %s\n", result.error().message.c_str());
      continue;
    }
    std::printf("\n");
    state.messages.push_back({"assistant", result->text});
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
