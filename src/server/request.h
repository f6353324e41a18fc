// One generation request of the inference service, and the events it answers with. The HTTP
// front end (or the C API, or a test) renders a chat to token ids, fills a ServeRequest and
// hands it to the Scheduler (server/scheduler.h) with a RequestSink; the scheduler then calls
// the sink with text deltas and exactly one end event.
//
// The sink's contract, which every front end may rely on:
//   - OnDelta and OnEnd run on the scheduler's loop thread, one call at a time per request, in
//     order; OnEnd is called exactly once per accepted request (finished, stopped, cancelled,
//     timed out, failed or shut down) and nothing follows it. After OnEnd the scheduler drops
//     its reference to the sink.
//   - A delta's text is never part of a UTF-8 character (a token that ends inside one is held
//     until the character is whole) and never holds a stop string or any part of one: text that
//     could begin a stop string is held until the following tokens show it does not. The
//     concatenation of every delta's text is the completion.
//   - The callbacks must return quickly (copy the event, wake your own loop): the next decode
//     step of every running request waits for them. They may call Scheduler::Cancel and
//     Scheduler::Status, never Scheduler::Shutdown or the scheduler's destructor.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "runtime/sampler.h"

namespace kite {

struct ServeRequest {
  // The prompt as token ids (a chat already rendered with the model's template and encoded,
  // BOS included where the model wants one). Not empty, every id in the vocabulary, shorter
  // than the context; Submit refuses others.
  std::vector<int32_t> prompt;
  // Sampler settings, checked by the caller through runtime/settings.h's table. temperature 0
  // is greedy: the output is then the same whether the request runs alone or among others.
  SamplerConfig sampler;
  // Most tokens to generate; < 0: until an end-of-text token or the context is full.
  int32_t max_tokens = -1;
  bool ignore_eos = false;  // end-of-text tokens are sampled and fed like any other
  // Generation ends before the first of these appears in the text; none of it is sent.
  std::vector<std::string> stop;
  // Report each sampled token's log-probability, and the `top_logprobs` most likely
  // alternatives (0..kMaxTopLogprobs) with theirs. Log-probabilities are of the model's
  // distribution (log-softmax of the logits, before penalties and temperature), as OpenAI's are.
  bool logprobs = false;
  int32_t top_logprobs = 0;
  // The request ends with FinishReason::kError / Failure::kDeadline once this passes (queued
  // or running); text already sent stays sent.
  std::optional<std::chrono::steady_clock::time_point> deadline;
  // Who asked (an API key, a peer address, a user name): the queue is served round robin
  // across clients, so one client's burst does not delay every other client's requests.
  std::string client;
};

inline constexpr int32_t kMaxTopLogprobs = 20;  // OpenAI's limit

// A token as the logprobs report shows it. `token` is the token's raw bytes, which may be part
// of a UTF-8 character (OpenAI reports those bytes too); front ends escape as needed.
struct TokenChoice {
  int32_t id = 0;
  std::string token;
  float logprob = 0.0f;
};
struct TokenLogprobs {
  TokenChoice sampled;
  std::vector<TokenChoice> top;  // most likely first, top_logprobs of them
};

// Text released since the previous delta, and (with logprobs) the tokens sampled since then.
// Logprobs cover every sampled token except a final end-of-text token, including tokens whose
// text a stop string cut off, so a delta may carry logprobs with empty text (the last one).
struct TextDelta {
  std::string text;
  std::vector<TokenLogprobs> logprobs;
};

enum class FinishReason {
  kStop,       // an end-of-text token or a stop string
  kLength,     // max_tokens, or the context is full
  kCancelled,  // Scheduler::Cancel
  kError,      // see RequestEnd::failure and message
};
// "stop", "length", "cancelled", "error".
const char* FinishReasonName(FinishReason reason);

enum class Failure {
  kNone,
  kDeadline,        // the request's deadline passed
  kShutdown,        // Scheduler::Shutdown ended it
  kOutOfResources,  // the KV cache pool had no page left for it
  kInternal,        // the engine failed (a bug, or broken weights giving NaN logits)
};

struct Usage {
  int32_t prompt_tokens = 0;
  int32_t cached_tokens = 0;      // of the prompt, taken from a KV cache instead of computed
  int32_t completion_tokens = 0;  // sampled tokens, a final end-of-text token excluded
};

// What speculative decoding did for one request (llama-server's timings.draft_n and
// draft_n_accepted): tokens drafted and verified, and how many of them were kept.
struct DraftUsage {
  int64_t drafted = 0;
  int64_t accepted = 0;
};

struct RequestEnd {
  FinishReason reason = FinishReason::kStop;
  Failure failure = Failure::kNone;  // kNone unless reason is kError
  std::string message;               // for kError: what went wrong, for the client
  Usage usage;
  // Where the time went: waiting in the queue, computing the prompt, generating.
  double queue_seconds = 0.0;
  double prefill_seconds = 0.0;
  double decode_seconds = 0.0;
  // Set when the request was decoded speculatively (the service runs with --spec and the
  // request asked for no logprobs).
  std::optional<DraftUsage> speculative;
};

class RequestSink {
 public:
  virtual ~RequestSink() = default;
  virtual void OnDelta(TextDelta delta) = 0;
  virtual void OnEnd(RequestEnd end) = 0;
};

}  // namespace kite
