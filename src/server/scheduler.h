// The inference service's scheduler: it owns the decode loop of one Engine and runs every
// request submitted to it, from any thread, on one loop thread.
//
// How it schedules (README "Serving" says the same for users):
//   - Slots: the engine's `parallel` sessions. A slot keeps its KV cache after its request ends,
//     so a later prompt that starts the same way (a shared system prompt, the earlier turns of a
//     chat) reuses it: the new request takes the slot holding the longest prefix of its prompt
//     (in place), or a free slot into which that prefix's KV rows are copied from the slot that
//     holds it. Only the rest of the prompt is computed; Usage::cached_tokens says how much was
//     not.
//   - Continuous batching: each decode step runs the next token of every running request in one
//     graph run; requests join and leave between steps.
//   - Prefill in turns: decode steps and prefill turns alternate; while streams decode, a turn
//     computes one chunk's worth of prompt tokens, so a long prompt adds at most one chunk's
//     time between two tokens of the running streams.
//   - Fairness: waiting requests are admitted round robin across ServeRequest::client, in
//     arrival order within a client.
//   - Bounded queue: at most SchedulerOptions::max_queue requests wait; Submit refuses more at
//     once (SubmitRefusal::kOverloaded with a Retry-After), never blocking the caller.
//   - Deadlines and cancellation are checked before every decode step and prefill chunk: a
//     cancelled, timed-out or disconnected request stops costing compute within one of them, and
//     the KV pages of its generated tokens return to the pool (its prompt's rows stay cached in
//     its slot, for a retry, until another request takes the slot).
//   - Determinism: with greedy sampling a request's tokens do not depend on what else runs (the
//     batched step computes each sequence's logits as a step of it alone would).
//   - Speculative decoding (with a SpeculativeSetup whose mode is not none): each slot holds a
//     drafter (a draft model's keeps a KV sequence of the draft engine per slot), and a request
//     decoding speculatively runs its own verification pass (runtime/speculator.h) after the
//     batched step of the others, each pass choosing 1 to k + 1 tokens. Greedy output is the
//     same tokens as without it. Requests with logprobs decode in the batch.
//
// Thread safety: Submit, Cancel and Status may be called from any thread, concurrently, and
// from inside a RequestSink callback. Shutdown (and the destructor, which calls it) from any
// thread but the loop's.
#pragma once

#include <cstdint>
#include <expected>
#include <memory>
#include <string>

#include "runtime/engine.h"
#include "runtime/speculative_setup.h"
#include "server/request.h"

namespace kite {

struct SchedulerOptions {
  // Requests that may wait for a slot; more are refused at once. 0: none wait.
  int32_t max_queue = 64;
  // Prompt tokens one request computes per prefill turn (between two decode steps); 0: the
  // engine's prefill_chunk.
  int32_t prefill_chunk = 0;
  // What an overloaded Submit tells the client to wait, in seconds (HTTP Retry-After).
  int32_t retry_after_seconds = 1;
};

using RequestId = uint64_t;  // never 0; unique for the scheduler's life

struct SubmitRefusal {
  enum Kind {
    kOverloaded,    // the queue is full: HTTP 503 (or 429) with Retry-After
    kInvalid,       // the request cannot run (empty prompt, bad id, too long): HTTP 400
    kShuttingDown,  // Shutdown was called: HTTP 503
  };
  Kind kind = kInvalid;
  std::string message;              // for the client, naming the field and the limit
  int32_t retry_after_seconds = 0;  // kOverloaded: SchedulerOptions::retry_after_seconds
};

// For /status and /metrics: a consistent snapshot.
struct SchedulerStatus {
  int32_t slots = 0;   // sequences that can run at once (the engine's parallel)
  int32_t active = 0;  // requests running (prefill or decode)
  int32_t queued = 0;  // requests waiting for a slot
  int32_t max_queue = 0;
  int64_t kv_pages_total = 0;
  int64_t kv_pages_used = 0;         // by running requests and cached prefixes
  int64_t kv_page_bytes = 0;         // bytes of one page (all layers, k and v)
  int64_t cached_prefix_tokens = 0;  // tokens of KV kept in idle slots for reuse
  // Generated tokens per second over the last few seconds (all requests together), and prompt
  // tokens computed per second over the same window.
  double decode_tokens_per_second = 0.0;
  double prefill_tokens_per_second = 0.0;
  // Counters since start.
  uint64_t requests_accepted = 0;
  uint64_t requests_refused = 0;   // by Submit, for any reason
  uint64_t requests_finished = 0;  // ended with stop or length
  uint64_t requests_cancelled = 0;
  uint64_t requests_failed = 0;  // ended with an error (deadline, shutdown, engine)
  uint64_t prompt_tokens = 0;    // of every accepted request that started
  uint64_t cached_prompt_tokens = 0;
  uint64_t completion_tokens = 0;
  uint64_t decode_steps = 0;  // batched graph runs of the decode loop
  // Speculative decoding: draft tokens verified, and how many of them were kept.
  uint64_t draft_tokens = 0;
  uint64_t draft_tokens_accepted = 0;
};

class Scheduler {
 public:
  // Starts the loop thread. The engine, and `speculative` when given, must outlive the
  // scheduler; `speculative` (null, or mode none: plain decoding) makes one drafter per slot,
  // OutOfResources when its draft engine has fewer sequences than the engine's `parallel`.
  static Result<std::unique_ptr<Scheduler>> Create(const Engine& engine,
                                                   const SchedulerOptions& options,
                                                   const SpeculativeSetup* speculative = nullptr);
  ~Scheduler();  // Shutdown()
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Queues `request`; `sink` hears its events (RequestSink's contract, server/request.h). On
  // refusal nothing is queued and the sink is never called.
  std::expected<RequestId, SubmitRefusal> Submit(ServeRequest request,
                                                 std::shared_ptr<RequestSink> sink);

  // Ends the request with FinishReason::kCancelled within one decode step or prefill chunk,
  // queued or running. True when it was queued or running (also for one that ends by itself
  // at that moment: it gets its own end event, never a second); false when unknown or ended.
  bool Cancel(RequestId id);

  SchedulerStatus Status() const;

  // Ends every queued and running request (FinishReason::kError, Failure::kShutdown, so a
  // stream gets its final event), stops the loop thread and refuses later Submits. Idempotent;
  // returns once every OnEnd has returned.
  void Shutdown();

  const Engine& engine() const { return engine_; }

 private:
  class Loop;
  Scheduler(const Engine& engine, std::unique_ptr<Loop> loop);

  const Engine& engine_;
  std::unique_ptr<Loop> loop_;
};

}  // namespace kite
