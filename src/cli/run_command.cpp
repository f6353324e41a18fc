// `kite run -m MODEL -p PROMPT [...]`: stream the continuation of one prompt.
#include <chrono>
#include <cstdio>
#include <memory>

#include <nlohmann/json.hpp>

#include "base/mapped_file.h"
#include "cli/command.h"
#include "cli/generation_flags.h"
#include "cli/server_flags.h"
#include "cli/speculative_cli.h"
#include "runtime/context_limit.h"
#include "runtime/prompt.h"
#include "runtime/run_config.h"
#include "runtime/session.h"

namespace kite::cli {

namespace {

struct RunOptions {
  std::string prompt;
  std::string prompt_file;
  std::string system;
  bool chat = false;
  bool json = false;
  bool truncate = false;
  ServerFlags server;
};

double PerSecond(int64_t count, double seconds) { return seconds > 0 ? count / seconds : 0.0; }

// The same run on a server: /v1/completions, or /v1/chat/completions with --chat.
Status RunOnServer(const RunSettings& config, const std::string& prompt, const RunOptions& options) {
  if (options.truncate) return InvalidInput("--truncate needs a local model (not with --server)");
  const ServerClient client = KITE_TRY(options.server.Client());
  nlohmann::json body = SamplingFields(config);
  if (options.chat) {
    nlohmann::json messages = nlohmann::json::array();
    if (!options.system.empty()) messages.push_back({{"role", "system"}, {"content", options.system}});
    messages.push_back({{"role", "user"}, {"content", prompt}});
    body["messages"] = std::move(messages);
  } else {
    body["prompt"] = prompt;
  }
  const auto start = std::chrono::steady_clock::now();
  const StreamOutcome outcome = KITE_TRY(client.Stream(
      options.chat ? "/v1/chat/completions" : "/v1/completions", std::move(body),
      [&](std::string_view text) {
        if (!options.json) {
          std::fwrite(text.data(), 1, text.size(), stdout);
          std::fflush(stdout);
        }
        return true;
      }));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (options.json) {
    nlohmann::ordered_json out = {
        {"text", outcome.text},
        {"finish_reason", outcome.finish_reason},
        {"stats", {{"server", client.address().Name()},
                   {"prompt_tokens", outcome.prompt_tokens},
                   {"generated_tokens", outcome.completion_tokens},
                   {"time_to_first_token_seconds", outcome.first_token_seconds},
                   {"seconds", seconds}}}};
    const std::string text = out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    std::fwrite(text.data(), 1, text.size(), stdout);
    return Ok();
  }
  std::printf("\n");
  std::fflush(stdout);
  std::fprintf(stderr, "server %s | prompt %lld tokens | first token %.3f s | generated %lld tokens in %.2f s | stop: %s\n",
               client.address().Name().c_str(), static_cast<long long>(outcome.prompt_tokens),
               outcome.first_token_seconds, static_cast<long long>(outcome.completion_tokens), seconds,
               outcome.finish_reason.empty() ? "-" : outcome.finish_reason.c_str());
  return Ok();
}

Status Run(const GenerationFlags& flags, const RunOptions& options) {
  const RunSettings config = KITE_TRY(flags.Resolve(/*need_model=*/!options.server.given()));
  std::string prompt = flags.Unescaped(options.prompt);
  if (!options.prompt_file.empty()) prompt = KITE_TRY(ReadTextFile(options.prompt_file, kTextFileLimit));
  if (options.server.given()) return RunOnServer(config, prompt, options);
  double load_seconds = 0;
  auto engine = KITE_TRY(LoadEngine(config, &load_seconds));
  const Tokenizer& tokenizer = engine->tokenizer();

  std::vector<int32_t> prompt_ids;
  if (options.chat) {
    const ChatTemplate chat_template = KITE_TRY(SelectChatTemplate(tokenizer, config.chat_template));
    std::vector<ChatMessage> messages;
    if (!options.system.empty()) messages.push_back({"system", options.system});
    messages.push_back({"user", prompt});
    prompt_ids = KITE_TRY(ChatPromptIds(tokenizer, chat_template, messages));
  } else {
    prompt_ids = KITE_TRY(RawPromptIds(tokenizer, prompt));
  }
  if (options.truncate) {
    KeepPromptTail(&prompt_ids, tokenizer.bos_id(), engine->context_length(), config.n_predict);
  } else if (Status fits = CheckContextRoom("the prompt", 0, std::ssize(prompt_ids),
                                            engine->context_length());
             !fits) {
    Error error = std::move(fits.error());
    error.message += " (leave room to generate: a larger --ctx, or --truncate to keep the tail)";
    return std::unexpected(std::move(error));
  }

  const Speculation speculation = KITE_TRY(StartSpeculation(config, *engine, &load_seconds));
  Session session(*engine);
  Session::GenerateOptions generate = GenerateOptionsOf(config);
  speculation.Apply(&generate);
  const auto start = std::chrono::steady_clock::now();
  double first_token_seconds = 0;
  generate.on_token = [&](int32_t id, std::string_view text) {
    if (first_token_seconds == 0 && id >= 0) {
      first_token_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    if (!options.json) {
      std::fwrite(text.data(), 1, text.size(), stdout);
      std::fflush(stdout);
    }
    return true;
  };
  const Session::GenerateResult result = KITE_TRY(session.Generate(prompt_ids, generate));

  nlohmann::ordered_json stats = {
      {"load_seconds", load_seconds},
      {"prompt_tokens", result.prompt_tokens},
      {"prefill_seconds", result.prefill_seconds},
      {"prefill_tokens_per_second", PerSecond(result.prefill_tokens, result.prefill_seconds)},
      {"time_to_first_token_seconds", first_token_seconds},
      {"generated_tokens", result.ids.size()},
      {"decode_seconds", result.decode_seconds},
      {"decode_tokens_per_second", PerSecond(result.decode_tokens, result.decode_seconds)},
      {"stop_reason", result.stop_reason},
      {"backend", config.engine.backend},
      {"context", engine->context_length()},
      {"kv_type", std::string(DTypeName(config.engine.kv_dtype))},
      {"kv_cache_bytes", engine->KvCacheBytes()},
      {"speculative", SpeculativeJson(speculation, result)}};
  if (options.json) {
    nlohmann::ordered_json out = {
        {"prompt_ids", prompt_ids}, {"ids", result.ids}, {"text", result.text}, {"stats", stats}};
    const std::string text = out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    std::fwrite(text.data(), 1, text.size(), stdout);
  } else {
    std::printf("\n");
    std::fflush(stdout);  // the text before the timing line, also when stdout is a pipe
    const std::string spec = SpeculativeSummary(speculation, result);
    std::fprintf(stderr,
                 "load %.2f s | prompt %d tokens, %.1f tok/s | first token %.3f s | "
                 "generated %zu tokens, %.1f tok/s | stop: %s%s%s\n",
                 load_seconds, result.prompt_tokens,
                 stats["prefill_tokens_per_second"].get<double>(), first_token_seconds,
                 result.ids.size(), stats["decode_tokens_per_second"].get<double>(),
                 result.stop_reason.c_str(), spec.empty() ? "" : " | ", spec.c_str());
  }
  return Ok();
}

}  // namespace

void AddRunCommand(CLI::App& app, int* exit_code) {
  auto options = std::make_shared<RunOptions>();
  CLI::App* command = app.add_subcommand("run", "Generate the continuation of a prompt");
  auto flags = std::make_shared<GenerationFlags>(command);
  CLI::Option* prompt = command->add_option("-p,--prompt", options->prompt, "The prompt text");
  CLI::Option* file = command->add_option("-f,--file", options->prompt_file, "Read the prompt from a file");
  prompt->excludes(file);
  options->server.Add(command);
  command->add_flag("--chat", options->chat, "Wrap the prompt as one user turn in the chat template");
  command->add_option("--system", options->system, "With --chat: a system message before the prompt");
  command->add_flag("--json", options->json,
                    "Print one JSON object {prompt_ids, ids, text, stats} instead of streaming (with "
                    "--server: {text, finish_reason, stats})");
  command->add_flag("--truncate", options->truncate,
                    "Keep the tail of a prompt too long for the context (BOS stays) instead of failing");
  command->callback([options, flags, prompt, file, exit_code] {
    if (prompt->count() == 0 && file->count() == 0) {
      *exit_code = ReportError(Error{ErrorCode::kInvalidInput, "run: give a prompt with -p TEXT or -f FILE"});
      return;
    }
    if (auto status = Run(*flags, *options); !status) *exit_code = ReportError(status.error());
  });
}

}  // namespace kite::cli
