#include "server/completion_endpoint.h"

#include <algorithm>
#include <mutex>
#include <utility>

#include "runtime/prompt.h"
#include "server/openai_response.h"

namespace kite {

namespace {

using Json = nlohmann::ordered_json;

// How a request that ended without text to show ends for the client.
ApiError EndError(const RequestEnd& end) {
  switch (end.failure) {
    case Failure::kDeadline:
      return MakeApiError(504, end.message, "timeout");
    case Failure::kShutdown:
      return MakeApiError(503, end.message, "shutting_down");
    case Failure::kOutOfResources:
      return MakeApiError(503, end.message, "out_of_resources");
    default:
      break;
  }
  if (end.reason == FinishReason::kCancelled)
    return MakeApiError(499, "the request was cancelled", "cancelled");
  return MakeApiError(500, end.message.empty() ? "the engine failed" : end.message, "internal");
}

class StreamSink final : public RequestSink {
 public:
  StreamSink(CompletionHead head, bool include_usage, bool logprobs,
             std::shared_ptr<HttpReply> reply)
      : head_(std::move(head)),
        include_usage_(include_usage),
        logprobs_(logprobs),
        reply_(std::move(reply)) {}

  // The headers and the first chunk (the role), as soon as the scheduler took the request (the
  // client knows at once it was accepted) or its first event came, whichever is first.
  void Begin() {
    std::call_once(begun_, [this] {
      reply_->Start(200, {{"Content-Type", "text/event-stream"},
                          {"Cache-Control", "no-cache"},
                          {"X-Accel-Buffering", "no"}});
      if (head_.kind == CompletionKind::kChat)
        reply_->Write(SseEvent(ChunkJson(head_, "", true, nullptr, nullptr)));
    });
  }

  void OnDelta(TextDelta delta) override {
    Begin();
    if (delta.text.empty() && delta.logprobs.empty()) return;
    const Json logprobs =
        logprobs_ ? LogprobsJson(head_.kind, delta.logprobs, text_offset_) : Json(nullptr);
    text_offset_ += delta.text.size();
    reply_->Write(SseEvent(ChunkJson(head_, delta.text, false, nullptr, logprobs)));
  }

  void OnEnd(RequestEnd end) override {
    Begin();
    if (end.reason == FinishReason::kStop || end.reason == FinishReason::kLength) {
      Json last = ChunkJson(head_, "", false, OpenAiFinishReason(end.reason), nullptr);
      last["timings"] = TimingsJson(end);  // as llama-server's last chunk has them
      reply_->Write(SseEvent(last));
      if (include_usage_) reply_->Write(SseEvent(UsageChunkJson(head_, end.usage)));
    } else {
      reply_->Write(SseEvent(ErrorJson(EndError(end))));
    }
    reply_->Write(kSseDone);
    reply_->End();
  }

 private:
  const CompletionHead head_;
  const bool include_usage_;
  const bool logprobs_;
  std::shared_ptr<HttpReply> reply_;
  std::once_flag begun_;
  size_t text_offset_ = 0;  // of the next delta in the completion (completions' logprobs)
};

class WholeSink final : public RequestSink {
 public:
  WholeSink(CompletionHead head, bool logprobs, std::shared_ptr<HttpReply> reply)
      : head_(std::move(head)), reply_(std::move(reply)) {
    if (logprobs) logprobs_.emplace();
  }

  void OnDelta(TextDelta delta) override {
    text_ += delta.text;
    if (logprobs_) {
      for (TokenLogprobs& token : delta.logprobs) logprobs_->push_back(std::move(token));
    }
  }

  void OnEnd(RequestEnd end) override {
    if (end.reason == FinishReason::kStop || end.reason == FinishReason::kLength) {
      reply_->Send(JsonResponse(200, CompletionJson(head_, text_, end, logprobs_)));
    } else {
      reply_->Send(ErrorResponse(EndError(end)));
    }
  }

 private:
  const CompletionHead head_;
  std::shared_ptr<HttpReply> reply_;
  std::string text_;
  std::optional<std::vector<TokenLogprobs>> logprobs_;
};

std::expected<std::vector<int32_t>, ApiError> PromptIds(const ServiceState& state,
                                                        const OpenAiRequest& request) {
  const Tokenizer& tokenizer = state.engine->tokenizer();
  Result<std::vector<int32_t>> ids;
  if (request.kind == CompletionKind::kChat) {
    if (!state.chat_template)
      return std::unexpected(BadRequest(state.chat_template_error, "messages"));
    ids = ChatPromptIds(tokenizer, *state.chat_template, request.messages);
  } else if (!request.prompt_ids.empty()) {
    ids = request.prompt_ids;
  } else {
    ids = RawPromptIds(tokenizer, request.prompt);
  }
  if (!ids)
    return std::unexpected(BadRequest(
        ids.error().message, request.kind == CompletionKind::kChat ? "messages" : "prompt"));
  const int64_t context = state.engine->context_length();
  if (static_cast<int64_t>(ids->size()) >= context) {
    ApiError error =
        BadRequest("the prompt has " + std::to_string(ids->size()) + " tokens; the context holds " +
                       std::to_string(context) + " and needs room for at least one more",
                   request.kind == CompletionKind::kChat ? "messages" : "prompt");
    error.code = "context_length_exceeded";
    return std::unexpected(std::move(error));
  }
  return std::move(*ids);
}

// Who asks, for the scheduler's round robin: the request's `user`, else the peer's address
// (without its port: one client opens many connections).
std::string ClientOf(const HttpRequest& http, const OpenAiRequest& request) {
  if (!request.user.empty()) return "user:" + request.user;
  if (http.transport == "unix") return "unix";
  return "tcp:" + http.peer.substr(0, http.peer.rfind(':'));
}

}  // namespace

void HandleCompletion(ServiceState& state, CompletionKind kind, const HttpRequest& http,
                      std::shared_ptr<HttpReply> reply) {
  auto parsed = ParseOpenAiRequest(kind, http.body, state.options.settings);
  if (!parsed) return reply->Send(ErrorResponse(parsed.error()));
  OpenAiRequest& request = *parsed;
  if (!state.ready.load(std::memory_order_acquire)) {
    ApiError loading = MakeApiError(503, "the model is loading", "loading");
    loading.retry_after_seconds = 1;
    return reply->Send(ErrorResponse(loading));
  }
  auto prompt = PromptIds(state, request);
  if (!prompt) return reply->Send(ErrorResponse(prompt.error()));

  DrawSeedIfRandom(&request.settings);
  ServeRequest serve;
  serve.prompt = std::move(*prompt);
  serve.sampler = request.settings.sampler;
  serve.max_tokens = request.settings.n_predict;
  serve.ignore_eos = request.settings.ignore_eos;
  serve.stop = request.settings.stop;
  serve.logprobs = request.logprobs;
  serve.top_logprobs = request.top_logprobs;
  serve.client = ClientOf(http, request);
  if (state.options.request_timeout.count() > 0) {
    serve.deadline = std::chrono::steady_clock::now() + state.options.request_timeout;
  }

  const CompletionHead head{kind, NewCompletionId(kind), UnixSeconds(), state.model_id};
  std::shared_ptr<StreamSink> stream;
  std::shared_ptr<RequestSink> sink;
  if (request.stream) {
    stream = std::make_shared<StreamSink>(head, request.include_usage, request.logprobs, reply);
    sink = stream;
  } else {
    sink = std::make_shared<WholeSink>(head, request.logprobs, reply);
  }
  auto id = state.scheduler->Submit(std::move(serve), sink);
  if (!id) {
    const SubmitRefusal& refusal = id.error();
    ApiError error = refusal.kind == SubmitRefusal::kInvalid
                         ? BadRequest(refusal.message)
                         : MakeApiError(503, refusal.message, "overloaded");
    if (refusal.kind == SubmitRefusal::kOverloaded)
      error.retry_after_seconds = std::max(1, refusal.retry_after_seconds);
    if (refusal.kind == SubmitRefusal::kShuttingDown) error.code = "shutting_down";
    return reply->Send(ErrorResponse(error));
  }
  if (stream) stream->Begin();
  Scheduler* scheduler = state.scheduler.get();
  reply->OnGone([scheduler, request_id = *id] { scheduler->Cancel(request_id); });
}

}  // namespace kite
