// OpenAI's response shapes, as the API reference gives them: a whole chat completion or text
// completion, the chunks of a stream (server-sent events), the usage object, logprobs, and the
// error envelope. Text that is not valid UTF-8 (a token's raw bytes in logprobs) is written with
// U+FFFD in JSON strings; the raw bytes go in logprobs' `bytes` arrays as OpenAI's do.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "server/http_reply.h"
#include "server/openai_request.h"
#include "server/request.h"

namespace kite {

// Names a completion for its whole life (one id per stream): "chatcmpl-…" or "cmpl-…".
std::string NewCompletionId(CompletionKind kind);
// Seconds since the Unix epoch, for `created`.
int64_t UnixSeconds();

// What a completion's responses share.
struct CompletionHead {
  CompletionKind kind = CompletionKind::kChat;
  std::string id;
  int64_t created = 0;
  std::string model;
};

nlohmann::ordered_json UsageJson(const Usage& usage);
// llama-server's `timings` object, beside `usage` in a whole response and in a stream's last
// chunk: cache_n, prompt_n (computed), prompt_ms, prompt_per_second, predicted_n,
// predicted_ms, predicted_per_second and, when the request was decoded speculatively, draft_n
// (tokens drafted and verified) and draft_n_accepted (of which kept).
nlohmann::ordered_json TimingsJson(const RequestEnd& end);
// "stop" or "length" (an end that is not an error).
const char* OpenAiFinishReason(FinishReason reason);

// The logprobs of some tokens: chat's {"content": [...], "refusal": null}, or completions'
// {"tokens", "token_logprobs", "top_logprobs", "text_offset"} (offsets from `text_offset`).
nlohmann::ordered_json LogprobsJson(CompletionKind kind, const std::vector<TokenLogprobs>& tokens,
                                    size_t text_offset = 0);

// The whole response of a request that was not streamed.
nlohmann::ordered_json CompletionJson(const CompletionHead& head, const std::string& text,
                                      const RequestEnd& end,
                                      const std::optional<std::vector<TokenLogprobs>>& logprobs);

// One chunk of a stream. Chat: `delta` is {"role": "assistant", "content": ""} for the first,
// {"content": text} after, {} with the finish_reason for the last. Completions: `text`.
nlohmann::ordered_json ChunkJson(const CompletionHead& head, const std::string& text, bool first,
                                 const char* finish_reason, const nlohmann::ordered_json& logprobs);
// The usage chunk sent before [DONE] when stream_options.include_usage: no choices.
nlohmann::ordered_json UsageChunkJson(const CompletionHead& head, const Usage& usage);

// {"error": {"message", "type", "param", "code"}}.
nlohmann::ordered_json ErrorJson(const ApiError& error);
// An error with the type OpenAI gives the status: "server_error" for 5xx, else
// "invalid_request_error".
ApiError MakeApiError(int status, std::string message, std::string code = "");
// A JSON body, and an error in the envelope (with Retry-After when it says so).
HttpResponse JsonResponse(int status, const nlohmann::ordered_json& body);
HttpResponse ErrorResponse(const ApiError& error);

// "data: <json>\n\n" and "data: [DONE]\n\n".
std::string SseEvent(const nlohmann::ordered_json& data);
inline constexpr const char* kSseDone = "data: [DONE]\n\n";

// JSON text with invalid UTF-8 replaced, never throwing.
std::string DumpJson(const nlohmann::ordered_json& value);

}  // namespace kite
