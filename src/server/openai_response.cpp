#include "server/openai_response.h"

#include <chrono>
#include <random>

namespace kite {

namespace {

using Json = nlohmann::ordered_json;

Json Bytes(const std::string& token) {
  Json bytes = Json::array();
  for (unsigned char byte : token) bytes.push_back(byte);
  return bytes;
}

Json OrNull(const std::string& text) { return text.empty() ? Json(nullptr) : Json(text); }

const char* ObjectName(CompletionKind kind, bool chunk) {
  if (kind == CompletionKind::kText) return "text_completion";
  return chunk ? "chat.completion.chunk" : "chat.completion";
}

Json Head(const CompletionHead& head, bool chunk) {
  return Json{{"id", head.id},
              {"object", ObjectName(head.kind, chunk)},
              {"created", head.created},
              {"model", head.model},
              {"system_fingerprint", nullptr}};
}

}  // namespace

std::string NewCompletionId(CompletionKind kind) {
  thread_local std::mt19937_64 random{std::random_device{}()};
  static constexpr char kDigits[] =
      "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
  std::string id = kind == CompletionKind::kChat ? "chatcmpl-" : "cmpl-";
  for (int i = 0; i < 24; ++i) id += kDigits[random() % (sizeof(kDigits) - 1)];
  return id;
}

int64_t UnixSeconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Json UsageJson(const Usage& usage) {
  return Json{{"prompt_tokens", usage.prompt_tokens},
              {"completion_tokens", usage.completion_tokens},
              {"total_tokens", usage.prompt_tokens + usage.completion_tokens},
              {"prompt_tokens_details", {{"cached_tokens", usage.cached_tokens}}}};
}

const char* OpenAiFinishReason(FinishReason reason) {
  return reason == FinishReason::kLength ? "length" : "stop";
}

Json LogprobsJson(CompletionKind kind, const std::vector<TokenLogprobs>& tokens,
                  size_t text_offset) {
  if (kind == CompletionKind::kChat) {
    Json content = Json::array();
    for (const TokenLogprobs& token : tokens) {
      Json top = Json::array();
      for (const TokenChoice& choice : token.top) {
        top.push_back(
            {{"token", choice.token}, {"logprob", choice.logprob}, {"bytes", Bytes(choice.token)}});
      }
      content.push_back({{"token", token.sampled.token},
                         {"logprob", token.sampled.logprob},
                         {"bytes", Bytes(token.sampled.token)},
                         {"top_logprobs", std::move(top)}});
    }
    return Json{{"content", std::move(content)}, {"refusal", nullptr}};
  }
  Json texts = Json::array(), logprobs = Json::array(), tops = Json::array(),
       offsets = Json::array();
  for (const TokenLogprobs& token : tokens) {
    texts.push_back(token.sampled.token);
    logprobs.push_back(token.sampled.logprob);
    Json top = Json::object();
    for (const TokenChoice& choice : token.top) top[choice.token] = choice.logprob;
    tops.push_back(std::move(top));
    offsets.push_back(text_offset);
    text_offset += token.sampled.token.size();
  }
  return Json{{"tokens", std::move(texts)},
              {"token_logprobs", std::move(logprobs)},
              {"top_logprobs", std::move(tops)},
              {"text_offset", std::move(offsets)}};
}

Json TimingsJson(const RequestEnd& end) {
  auto per_second = [](int64_t n, double seconds) { return seconds > 0 ? n / seconds : 0.0; };
  const int32_t computed = end.usage.prompt_tokens - end.usage.cached_tokens;
  Json timings = {
      {"cache_n", end.usage.cached_tokens},
      {"prompt_n", computed},
      {"prompt_ms", end.prefill_seconds * 1e3},
      {"prompt_per_second", per_second(computed, end.prefill_seconds)},
      {"predicted_n", end.usage.completion_tokens},
      {"predicted_ms", end.decode_seconds * 1e3},
      {"predicted_per_second", per_second(end.usage.completion_tokens, end.decode_seconds)}};
  if (end.speculative) {
    timings["draft_n"] = end.speculative->drafted;
    timings["draft_n_accepted"] = end.speculative->accepted;
  }
  return timings;
}

Json CompletionJson(const CompletionHead& head, const std::string& text, const RequestEnd& end,
                    const std::optional<std::vector<TokenLogprobs>>& logprobs) {
  Json response = Head(head, /*chunk=*/false);
  Json choice = {{"index", 0}};
  if (head.kind == CompletionKind::kChat) {
    choice["message"] = {{"role", "assistant"}, {"content", text}, {"refusal", nullptr}};
  } else {
    choice["text"] = text;
  }
  choice["logprobs"] = logprobs ? LogprobsJson(head.kind, *logprobs) : Json(nullptr);
  choice["finish_reason"] = OpenAiFinishReason(end.reason);
  response["choices"] = Json::array({std::move(choice)});
  response["usage"] = UsageJson(end.usage);
  response["timings"] = TimingsJson(end);
  return response;
}

Json ChunkJson(const CompletionHead& head, const std::string& text, bool first,
               const char* finish_reason, const Json& logprobs) {
  Json chunk = Head(head, /*chunk=*/true);
  Json choice = {{"index", 0}};
  if (head.kind == CompletionKind::kChat) {
    Json delta = Json::object();
    if (first) delta["role"] = "assistant";
    if (first || !text.empty()) delta["content"] = text;
    choice["delta"] = std::move(delta);
  } else {
    choice["text"] = text;
  }
  choice["logprobs"] = logprobs;
  choice["finish_reason"] = finish_reason ? Json(finish_reason) : Json(nullptr);
  chunk["choices"] = Json::array({std::move(choice)});
  return chunk;
}

Json UsageChunkJson(const CompletionHead& head, const Usage& usage) {
  Json chunk = Head(head, /*chunk=*/true);
  chunk["choices"] = Json::array();
  chunk["usage"] = UsageJson(usage);
  return chunk;
}

Json ErrorJson(const ApiError& error) {
  return Json{{"error",
               {{"message", error.message},
                {"type", error.type},
                {"param", OrNull(error.param)},
                {"code", OrNull(error.code)}}}};
}

ApiError MakeApiError(int status, std::string message, std::string code) {
  ApiError error;
  error.status = status;
  error.message = std::move(message);
  error.code = std::move(code);
  if (status >= 500) error.type = "server_error";
  return error;
}

HttpResponse JsonResponse(int status, const Json& body) {
  return HttpResponse{status, {{"Content-Type", "application/json"}}, DumpJson(body)};
}

HttpResponse ErrorResponse(const ApiError& error) {
  HttpResponse response = JsonResponse(error.status, ErrorJson(error));
  if (error.retry_after_seconds > 0) {
    response.headers.emplace_back("Retry-After", std::to_string(error.retry_after_seconds));
  }
  return response;
}

std::string SseEvent(const Json& data) { return "data: " + DumpJson(data) + "\n\n"; }

std::string DumpJson(const Json& value) {
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace kite
