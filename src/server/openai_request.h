// The body of an OpenAI `POST /v1/chat/completions` or `/v1/completions` request, parsed and
// checked. Fields follow OpenAI's API reference; values that are also Kite settings (temperature,
// top_p, penalties, seed, max tokens, stop) are checked by runtime/settings.h's table, so a
// refusal reads as `kite run`'s does: `request: "top_p" = 2: must be in [0, 1]`. Unknown fields
// are ignored (clients send many); a known field of the wrong type, or a value Kite cannot honour
// (n > 1, several prompts), is an error naming the field.
#pragma once

#include <cstdint>
#include <expected>
#include <string>
#include <string_view>
#include <vector>

#include "chat/chat_template.h"
#include "runtime/settings.h"
#include "server/request.h"

namespace kite {

// An error as OpenAI's API returns it: the HTTP status and the `error` object's fields.
struct ApiError {
  int status = 400;
  std::string type = "invalid_request_error";
  std::string message;
  std::string param;            // the request field at fault; "" when none
  std::string code;             // "" when none
  int retry_after_seconds = 0;  // > 0: sent as Retry-After
};

ApiError BadRequest(std::string message, std::string param = "");

enum class CompletionKind { kChat, kText };

struct OpenAiRequest {
  CompletionKind kind = CompletionKind::kChat;
  std::vector<ChatMessage> messages;  // kChat
  std::string prompt;                 // kText, given as text
  std::vector<int32_t> prompt_ids;    // kText, given as token ids (then prompt is empty)
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  // The server's settings with the request's values over them: sampler, n_predict (from
  // max_completion_tokens / max_tokens), stop, random_seed (true unless the request has a seed).
  RunSettings settings;
  // Chat: logprobs (bool) and top_logprobs (0..20). Completions: logprobs N (0..5) means the
  // sampled token's and the N most likely.
  bool logprobs = false;
  int32_t top_logprobs = 0;
  std::string user;  // who asks, for fairness across clients ("" when not said)
};

// `defaults`: the server's settings (kite serve's flags and run.json).
std::expected<OpenAiRequest, ApiError> ParseOpenAiRequest(CompletionKind kind,
                                                          std::string_view body,
                                                          const RunSettings& defaults);

}  // namespace kite
