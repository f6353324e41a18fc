// One request's run state, from Submit to its end event: the sampler, the streaming text
// (UTF-8 held whole, stop strings held back), logprobs, usage and timing, speculative decoding's
// per-request state, and the guarantee of exactly one end event. The scheduler's loop thread
// drives it; only the cancel flag is touched by other threads.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "runtime/engine.h"
#include "runtime/sampler.h"
#include "runtime/session.h"
#include "runtime/speculator.h"
#include "runtime/stop_strings.h"
#include "server/logprobs.h"
#include "server/request.h"
#include "server/scheduler.h"

namespace kite {

class RequestRun {
 public:
  using Clock = std::chrono::steady_clock;
  enum class Phase { kQueued, kPrefill, kDecode, kEnded };

  RequestRun(RequestId id, ServeRequest request, std::shared_ptr<RequestSink> sink);

  RequestId id() const { return id_; }
  const ServeRequest& request() const { return request_; }
  Phase phase() const { return phase_; }
  int32_t slot() const { return slot_; }
  // The token the next decode step feeds (kDecode).
  int32_t pending_token() const { return pending_token_; }
  int32_t cached_tokens() const { return usage_.cached_tokens; }

  // Any thread.
  void RequestCancel() { cancel_.store(true, std::memory_order_relaxed); }
  bool cancel_requested() const { return cancel_.load(std::memory_order_relaxed); }
  bool PastDeadline(Clock::time_point now) const {
    return request_.deadline && now >= *request_.deadline;
  }

  // Admitted into `slot`, whose session already holds `cached` tokens of the prompt. With a
  // `drafter` (the slot's, which must outlive the run) the request decodes speculatively,
  // unless it asked for logprobs: a verification pass keeps the logits of its rows only while
  // it judges them, so those requests decode plainly.
  void Start(const Engine& engine, int32_t slot, int32_t cached, Drafter* drafter = nullptr,
             const DraftLimits& limits = {});
  // The prompt tokens the next prefill chunk feeds: [position, min(size, position + chunk)).
  std::span<const int32_t> NextChunk(int32_t position, int32_t chunk) const;

  // The logits after the prompt's last token (from the prefill) or after the pending token
  // (from a decode step): samples the next token, streams its text and decides whether to go
  // on. `session` holds everything fed so far. Returns false once the request has ended.
  // Errors (non-finite logits) end it with Failure::kInternal and return false.
  bool Accept(std::span<const float> logits, const Session& session, const Engine& engine);

  // Whether decode steps go through Speculate instead of the scheduler's batched step.
  bool speculating() const { return speculator_.has_value(); }
  // A speculative decode step (kDecode, speculating()): feeds the pending token with a draft
  // in one verification pass (runtime/speculator.h), with the request's own sampler, never
  // past the context or max_tokens, and takes every token chosen as Accept takes a sampled
  // one. The session may then hold tokens past where the request ended (a draft fed beyond an
  // end-of-text token or a stop string): its first prompt + completion_tokens() are what the
  // request produced. Returns false once the request has ended; an engine error is returned
  // for the caller to end the request with.
  Result<bool> Speculate(Session& session, const Engine& engine);
  // Drafted and kept tokens so far (zero when not speculating).
  DraftUsage draft_usage() const;

  // Ends the request now (cancel, deadline, shutdown, an engine error): no further text.
  void Fail(FinishReason reason, Failure failure, std::string message);

  int32_t completion_tokens() const { return usage_.completion_tokens; }
  // Any thread: whether the end event was sent (or is being sent).
  bool ended() const { return ended_.load(std::memory_order_acquire); }
  // Once ended: why.
  FinishReason finish_reason() const { return finish_reason_; }

 private:
  // Streams the chosen token `id` and decides whether to go on; `n_past` is the number of
  // tokens before it (the history plain decoding would have when it was sampled).
  bool Take(int32_t id, int32_t n_past, const Engine& engine);
  // The end of a completed generation: flushes the held text, then the end event.
  void Finish(FinishReason reason);
  void Emit(std::string text);
  void End(RequestEnd end);

  const RequestId id_;
  const ServeRequest request_;
  std::shared_ptr<RequestSink> sink_;  // reset after the end event
  std::atomic<bool> cancel_{false};
  std::atomic<bool> ended_{false};
  Phase phase_ = Phase::kQueued;
  int32_t slot_ = -1;

  std::optional<Sampler> sampler_;
  std::optional<Speculator> speculator_;  // with a drafter: this request's draft lengths, stats
  std::optional<Tokenizer::StreamDecoder> decoder_;
  StopStringFilter filter_;
  std::optional<LogprobsReporter> logprobs_;
  std::vector<TokenLogprobs> pending_logprobs_;  // not yet sent with a delta
  int32_t pending_token_ = -1;
  int32_t previous_token_ = -1;  // the last token fed or sampled (for logprobs' bytes)
  Usage usage_;
  FinishReason finish_reason_ = FinishReason::kStop;

  Clock::time_point submitted_ = Clock::now();
  Clock::time_point started_{};
  Clock::time_point first_token_{};
};

}  // namespace kite
