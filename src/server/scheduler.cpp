#include "server/scheduler.h"

#include <algorithm>
#include <condition_variable>
#include <limits>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "runtime/batch_decode.h"
#include "runtime/session.h"
#include "server/decode_rate.h"
#include "server/fair_queue.h"
#include "server/request_run.h"
#include "server/slot_choice.h"

namespace kite {

namespace {

Failure FailureOf(const Error& error) {
  return error.code == ErrorCode::kOutOfResources ? Failure::kOutOfResources : Failure::kInternal;
}

}  // namespace

// Everything the loop thread owns (slots, sessions, the batch decoder) and what it shares with
// callers under mutex_ (the queue, the live requests, the counters).
class Scheduler::Loop {
 public:
  // `drafters`: one per slot (speculative decoding), or none.
  Loop(const Engine& engine, const SchedulerOptions& options,
       std::vector<std::unique_ptr<Drafter>> drafters, DraftLimits limits);
  ~Loop() { Shutdown(); }

  std::expected<RequestId, SubmitRefusal> Submit(ServeRequest request,
                                                 std::shared_ptr<RequestSink> sink);
  bool Cancel(RequestId id);
  SchedulerStatus Status() const;
  void Shutdown();

 private:
  struct Slot {
    std::unique_ptr<Session> session;
    // Null: plain decoding. Before `run`, whose Speculator refers to it: it goes after the run.
    std::unique_ptr<Drafter> drafter;
    std::shared_ptr<RequestRun> run;  // null while idle
    uint64_t last_used = 0;
  };

  void Run();
  std::optional<SubmitRefusal> Check(const ServeRequest& request) const;
  // Takes queued requests into idle slots, ends queued ones cancelled or past their deadline.
  // Returns false when the loop should stop.
  bool Admit();
  void StartRun(std::shared_ptr<RequestRun> run);
  // Ends running requests that were cancelled or whose deadline passed.
  void EndCancelled();
  void DecodeStep();
  // One verification pass of every running request that decodes speculatively.
  void SpeculativeSteps();
  void PrefillTurn();
  // The slot's request has had its end event: the slot becomes idle. Unless it finished
  // normally, the KV rows of its generated tokens go back to the pool and only its prompt's
  // stay cached.
  void Release(int32_t slot);
  // Ends the slot's request now (no more text) and releases the slot.
  void FailRun(int32_t slot, FinishReason reason, Failure failure, std::string message);
  // Counts a request that ended (under mutex_).
  void CountEnd(const RequestRun& run);
  // Tokens whose KV rows idle slots keep for later prompts.
  int64_t CachedTokens() const;

  const Engine& engine_;
  const SchedulerOptions options_;
  const int32_t chunk_;  // prompt tokens per prefill turn
  const DraftLimits draft_limits_;

  // Loop thread only.
  std::vector<Slot> slots_;
  BatchDecoder decoder_;
  uint64_t use_counter_ = 0;
  size_t prefill_cursor_ = 0;  // the slot the next prefill turn starts at (round robin)
  std::vector<Session*> batch_sessions_;
  std::vector<int32_t> batch_tokens_, batch_slots_;

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  FairQueue queue_;
  std::unordered_map<RequestId, std::shared_ptr<RequestRun>> live_;  // queued and running
  RequestId next_id_ = 1;
  int32_t running_ = 0;
  bool stopping_ = false;
  SchedulerStatus counters_;
  DecodeRate decode_rate_, prefill_rate_;
  std::thread thread_;  // last: starts once everything above exists
};

Scheduler::Loop::Loop(const Engine& engine, const SchedulerOptions& options,
                      std::vector<std::unique_ptr<Drafter>> drafters, DraftLimits limits)
    : engine_(engine),
      options_(options),
      chunk_(options.prefill_chunk > 0 ? options.prefill_chunk : engine.options().prefill_chunk),
      draft_limits_(limits),
      decoder_(engine) {
  slots_.resize(engine.options().parallel);
  for (size_t i = 0; i < slots_.size(); ++i) {
    slots_[i].session = std::make_unique<Session>(engine);
    if (i < drafters.size()) {
      slots_[i].drafter = std::move(drafters[i]);
      slots_[i].session->set_rollback_reserve(limits.draft_max);
    }
  }
  batch_sessions_.reserve(slots_.size());
  batch_tokens_.reserve(slots_.size());
  batch_slots_.reserve(slots_.size());
  thread_ = std::thread([this] { Run(); });
}

std::optional<SubmitRefusal> Scheduler::Loop::Check(const ServeRequest& request) const {
  auto invalid = [](std::string message) {
    return SubmitRefusal{.kind = SubmitRefusal::kInvalid, .message = std::move(message)};
  };
  if (request.prompt.empty()) return invalid("the prompt is empty");
  const int32_t vocab = engine_.config().vocab;
  for (size_t i = 0; i < request.prompt.size(); ++i) {
    if (request.prompt[i] < 0 || request.prompt[i] >= vocab) {
      return invalid("prompt token " + std::to_string(i) + " is id " +
                     std::to_string(request.prompt[i]) + ", outside the model's vocabulary [0, " +
                     std::to_string(vocab) + ")");
    }
  }
  if (std::ssize(request.prompt) > engine_.context_length()) {
    return invalid("the prompt has " + std::to_string(request.prompt.size()) +
                   " tokens, more than the context's " + std::to_string(engine_.context_length()));
  }
  if (request.top_logprobs < 0 || request.top_logprobs > kMaxTopLogprobs) {
    return invalid("top_logprobs " + std::to_string(request.top_logprobs) + ": must be in [0, " +
                   std::to_string(kMaxTopLogprobs) + "]");
  }
  return std::nullopt;
}

std::expected<RequestId, SubmitRefusal> Scheduler::Loop::Submit(ServeRequest request,
                                                                std::shared_ptr<RequestSink> sink) {
  std::optional<SubmitRefusal> refusal = Check(request);
  std::unique_lock lock(mutex_);
  if (!refusal && stopping_) {
    refusal = SubmitRefusal{.kind = SubmitRefusal::kShuttingDown,
                            .message = "the server is shutting down"};
  }
  // Requests that will find an idle slot at the loop's next turn do not wait.
  const size_t room = options_.max_queue + slots_.size() - running_;
  if (!refusal && queue_.size() >= room) {
    refusal = SubmitRefusal{.kind = SubmitRefusal::kOverloaded,
                            .message = "the server is busy: " + std::to_string(running_) +
                                       " requests running and " + std::to_string(queue_.size()) +
                                       " waiting, the most it queues (max_queue " +
                                       std::to_string(options_.max_queue) + "); retry later",
                            .retry_after_seconds = options_.retry_after_seconds};
  }
  if (refusal) {
    ++counters_.requests_refused;
    return std::unexpected(std::move(*refusal));
  }
  const RequestId id = next_id_++;
  auto run = std::make_shared<RequestRun>(id, std::move(request), std::move(sink));
  live_.emplace(id, run);
  queue_.Push(std::move(run));
  ++counters_.requests_accepted;
  lock.unlock();
  wake_.notify_one();
  return id;
}

bool Scheduler::Loop::Cancel(RequestId id) {
  std::unique_lock lock(mutex_);
  const auto found = live_.find(id);
  if (found == live_.end() || found->second->ended()) return false;
  found->second->RequestCancel();
  lock.unlock();
  wake_.notify_one();
  return true;
}

SchedulerStatus Scheduler::Loop::Status() const {
  const KvPool& pool = engine_.kv_pool();
  std::lock_guard lock(mutex_);
  SchedulerStatus status = counters_;
  status.slots = static_cast<int32_t>(slots_.size());
  status.active = running_;
  status.queued = static_cast<int32_t>(queue_.size());
  status.max_queue = options_.max_queue;
  status.kv_pages_total = pool.config().n_pages;
  status.kv_pages_used = pool.config().n_pages - pool.free_pages();
  status.kv_page_bytes = static_cast<int64_t>(engine_.KvCacheBytes() / pool.config().n_pages);
  const auto now = DecodeRate::Clock::now();
  status.decode_tokens_per_second = decode_rate_.PerSecond(now);
  status.prefill_tokens_per_second = prefill_rate_.PerSecond(now);
  return status;
}

void Scheduler::Loop::Shutdown() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  // From the loop thread itself (a sink breaking its contract) the loop ends after this turn;
  // the owner's destructor joins it.
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

void Scheduler::Loop::CountEnd(const RequestRun& run) {
  switch (run.finish_reason()) {
    case FinishReason::kStop:
    case FinishReason::kLength:
      ++counters_.requests_finished;
      break;
    case FinishReason::kCancelled:
      ++counters_.requests_cancelled;
      break;
    case FinishReason::kError:
      ++counters_.requests_failed;
      break;
  }
  counters_.completion_tokens += run.completion_tokens();
}

int64_t Scheduler::Loop::CachedTokens() const {
  int64_t cached = 0;
  for (const Slot& slot : slots_) {
    if (!slot.run) cached += slot.session->n_past();
  }
  return cached;
}

bool Scheduler::Loop::Admit() {
  int32_t idle = 0;
  for (const Slot& slot : slots_) idle += slot.run == nullptr;
  std::deque<std::shared_ptr<RequestRun>> dropped, admitted;
  {
    std::unique_lock lock(mutex_);
    wake_.wait(lock, [&] { return stopping_ || !queue_.empty() || running_ > 0; });
    if (stopping_) return false;
    const auto now = RequestRun::Clock::now();
    dropped = queue_.RemoveIf(
        [&](const RequestRun& run) { return run.cancel_requested() || run.PastDeadline(now); });
    for (; idle > 0 && !queue_.empty(); --idle) admitted.push_back(queue_.Pop());
    running_ += static_cast<int32_t>(admitted.size());
    for (const auto& run : dropped) live_.erase(run->id());
  }
  for (const auto& run : dropped) {
    if (run->cancel_requested()) {
      run->Fail(FinishReason::kCancelled, Failure::kNone, "");
    } else {
      run->Fail(FinishReason::kError, Failure::kDeadline,
                "the request's deadline passed while it waited for a slot");
    }
  }
  if (!dropped.empty()) {
    std::lock_guard lock(mutex_);
    for (const auto& run : dropped) CountEnd(*run);
  }
  for (auto& run : admitted) StartRun(std::move(run));
  return true;
}

void Scheduler::Loop::StartRun(std::shared_ptr<RequestRun> run) {
  std::vector<SlotView> views(slots_.size());
  for (size_t i = 0; i < slots_.size(); ++i) {
    views[i] = {.history = slots_[i].session->history(),
                .busy = slots_[i].run != nullptr,
                .last_used = slots_[i].last_used};
  }
  const std::span<const int32_t> prompt(run->request().prompt);
  const SlotChoice choice = *ChooseSlot(views, prompt);  // Admit counted an idle slot
  Session& session = *slots_[choice.slot].session;
  int32_t reused = -1;
  if (choice.source >= 0 && session.CopyPrefixFrom(*slots_[choice.source].session, choice.reuse)) {
    reused = choice.reuse;
  }
  if (reused < 0) reused = session.ReusePrefix(prompt);  // in place (or the copy failed)
  slots_[choice.slot].run = run;
  slots_[choice.slot].last_used = ++use_counter_;
  run->Start(engine_, choice.slot, reused, slots_[choice.slot].drafter.get(), draft_limits_);
  const int64_t cached = CachedTokens();
  std::lock_guard lock(mutex_);
  counters_.cached_prefix_tokens = cached;
  counters_.prompt_tokens += prompt.size();
  counters_.cached_prompt_tokens += reused;
}

void Scheduler::Loop::Release(int32_t slot) {
  std::shared_ptr<RequestRun> run = std::move(slots_[slot].run);
  Session& session = *slots_[slot].session;
  const FinishReason reason = run->finish_reason();
  const int32_t prompt = static_cast<int32_t>(run->request().prompt.size());
  if (reason == FinishReason::kCancelled || reason == FinishReason::kError) {
    session.Truncate(prompt);
  } else if (session.n_past() > prompt + run->completion_tokens()) {
    // A verification pass fed draft tokens past where the request ended (an end-of-text token,
    // a stop string): the cache keeps what it produced, as plain decoding's does.
    session.Truncate(prompt + run->completion_tokens());
  }
  const int64_t cached = CachedTokens();
  std::lock_guard lock(mutex_);
  counters_.cached_prefix_tokens = cached;
  --running_;
  live_.erase(run->id());
  CountEnd(*run);
}

void Scheduler::Loop::FailRun(int32_t slot, FinishReason reason, Failure failure,
                              std::string message) {
  slots_[slot].run->Fail(reason, failure, std::move(message));
  Release(slot);
}

void Scheduler::Loop::EndCancelled() {
  const auto now = RequestRun::Clock::now();
  for (size_t i = 0; i < slots_.size(); ++i) {
    const RequestRun* run = slots_[i].run.get();
    if (!run) continue;
    if (run->cancel_requested()) {
      FailRun(static_cast<int32_t>(i), FinishReason::kCancelled, Failure::kNone, "");
    } else if (run->PastDeadline(now)) {
      FailRun(static_cast<int32_t>(i), FinishReason::kError, Failure::kDeadline,
              "the request's deadline passed after " + std::to_string(run->completion_tokens()) +
                  " generated tokens");
    }
  }
}

void Scheduler::Loop::DecodeStep() {
  batch_sessions_.clear();
  batch_tokens_.clear();
  batch_slots_.clear();
  for (size_t i = 0; i < slots_.size(); ++i) {
    const RequestRun* run = slots_[i].run.get();
    if (!run || run->phase() != RequestRun::Phase::kDecode || run->speculating()) continue;
    batch_sessions_.push_back(slots_[i].session.get());
    batch_tokens_.push_back(run->pending_token());
    batch_slots_.push_back(static_cast<int32_t>(i));
  }
  if (batch_slots_.empty()) return;
  Result<std::span<const float>> logits = decoder_.Step(batch_sessions_, batch_tokens_);
  if (!logits) {
    // All or nothing: no session changed. Every request of the step ends with the error.
    for (const int32_t slot : batch_slots_) {
      FailRun(slot, FinishReason::kError, FailureOf(logits.error()), logits.error().message);
    }
    return;
  }
  const size_t vocab = logits->size() / batch_slots_.size();  // [B, vocab]
  for (size_t row = 0; row < batch_slots_.size(); ++row) {
    Slot& slot = slots_[batch_slots_[row]];
    if (!slot.run->Accept(logits->subspan(row * vocab, vocab), *slot.session, engine_)) {
      Release(batch_slots_[row]);
    }
  }
  std::lock_guard lock(mutex_);
  ++counters_.decode_steps;
  decode_rate_.Add(static_cast<int64_t>(batch_slots_.size()));
}

void Scheduler::Loop::SpeculativeSteps() {
  int64_t tokens = 0, drafted = 0, accepted = 0;
  for (size_t i = 0; i < slots_.size(); ++i) {
    RequestRun* run = slots_[i].run.get();
    if (!run || run->phase() != RequestRun::Phase::kDecode || !run->speculating()) continue;
    const int32_t before = run->completion_tokens();
    const DraftUsage usage = run->draft_usage();
    Result<bool> going = run->Speculate(*slots_[i].session, engine_);
    tokens += run->completion_tokens() - before;
    drafted += run->draft_usage().drafted - usage.drafted;
    accepted += run->draft_usage().accepted - usage.accepted;
    if (!going) {
      FailRun(static_cast<int32_t>(i), FinishReason::kError, FailureOf(going.error()),
              going.error().message);
    } else if (!*going) {
      Release(static_cast<int32_t>(i));
    }
  }
  if (tokens == 0 && drafted == 0) return;
  std::lock_guard lock(mutex_);
  counters_.draft_tokens += drafted;
  counters_.draft_tokens_accepted += accepted;
  decode_rate_.Add(tokens);
}

void Scheduler::Loop::PrefillTurn() {
  // One whole chunk of each prompt being computed, in slot order from the cursor, until a
  // turn's budget is spent: one chunk's tokens while streams are decoding (several short
  // prompts share a turn, a long one takes a chunk per turn, and the streams wait at most that
  // long for their next token), no limit while none is (every new prompt advances, for the
  // first tokens' sake). A prompt's chunks start where its reused prefix ends, whatever else
  // runs.
  const bool decoding = std::any_of(slots_.begin(), slots_.end(), [](const Slot& slot) {
    return slot.run && slot.run->phase() == RequestRun::Phase::kDecode;
  });
  const int32_t budget = decoding ? chunk_ : std::numeric_limits<int32_t>::max();
  int32_t fed = 0;
  const size_t n = slots_.size();
  for (size_t k = 0; k < n; ++k) {
    const size_t i = (prefill_cursor_ + k) % n;
    RequestRun* run = slots_[i].run.get();
    if (!run || run->phase() != RequestRun::Phase::kPrefill) continue;
    if (run->cancel_requested()) {
      FailRun(static_cast<int32_t>(i), FinishReason::kCancelled, Failure::kNone, "");
      continue;
    }
    Session& session = *slots_[i].session;
    const std::span<const int32_t> chunk = run->NextChunk(session.n_past(), chunk_);
    if (fed > 0 && fed + std::ssize(chunk) > budget) break;
    prefill_cursor_ = (i + 1) % n;
    Result<std::span<const float>> logits = session.Feed(chunk);
    if (!logits) {
      FailRun(static_cast<int32_t>(i), FinishReason::kError, FailureOf(logits.error()),
              logits.error().message);
      continue;
    }
    fed += static_cast<int32_t>(chunk.size());
    if (session.n_past() == std::ssize(run->request().prompt) &&
        !run->Accept(*logits, session, engine_)) {
      Release(static_cast<int32_t>(i));
    }
  }
  if (fed > 0) {
    std::lock_guard lock(mutex_);
    prefill_rate_.Add(fed);
  }
}

void Scheduler::Loop::Run() {
  while (Admit()) {
    EndCancelled();
    DecodeStep();
    SpeculativeSteps();
    PrefillTurn();
  }
  // Shutdown: every request still queued or running gets its end event.
  std::deque<std::shared_ptr<RequestRun>> queued;
  {
    std::lock_guard lock(mutex_);
    queued = queue_.Clear();
    for (const auto& run : queued) live_.erase(run->id());
  }
  for (const auto& run : queued) {
    run->Fail(FinishReason::kError, Failure::kShutdown, "the server is shutting down");
  }
  for (size_t i = 0; i < slots_.size(); ++i) {
    if (slots_[i].run) {
      FailRun(static_cast<int32_t>(i), FinishReason::kError, Failure::kShutdown,
              "the server is shutting down");
    }
  }
  std::lock_guard lock(mutex_);
  for (const auto& run : queued) CountEnd(*run);
}

Result<std::unique_ptr<Scheduler>> Scheduler::Create(const Engine& engine,
                                                     const SchedulerOptions& options,
                                                     const SpeculativeSetup* speculative) {
  if (options.max_queue < 0) {
    return InvalidInput("max_queue " + std::to_string(options.max_queue) + ": must be >= 0");
  }
  if (options.prefill_chunk < 0 || options.prefill_chunk > engine.options().prefill_chunk) {
    return InvalidInput("prefill_chunk " + std::to_string(options.prefill_chunk) +
                        ": must be in [0, " + std::to_string(engine.options().prefill_chunk) +
                        "] (the engine's)");
  }
  if (options.retry_after_seconds < 0) {
    return InvalidInput("retry_after_seconds " + std::to_string(options.retry_after_seconds) +
                        ": must be >= 0");
  }
  std::vector<std::unique_ptr<Drafter>> drafters;
  DraftLimits limits;
  if (speculative != nullptr && speculative->enabled()) {
    limits = speculative->limits();
    for (int32_t i = 0; i < engine.options().parallel; ++i) {
      drafters.push_back(KITE_TRY(speculative->NewDrafter()));
    }
  }
  return std::unique_ptr<Scheduler>(
      new Scheduler(engine, std::make_unique<Loop>(engine, options, std::move(drafters), limits)));
}

Scheduler::Scheduler(const Engine& engine, std::unique_ptr<Loop> loop)
    : engine_(engine), loop_(std::move(loop)) {}

Scheduler::~Scheduler() = default;  // the loop's destructor shuts down

std::expected<RequestId, SubmitRefusal> Scheduler::Submit(ServeRequest request,
                                                          std::shared_ptr<RequestSink> sink) {
  return loop_->Submit(std::move(request), std::move(sink));
}
bool Scheduler::Cancel(RequestId id) { return loop_->Cancel(id); }
SchedulerStatus Scheduler::Status() const { return loop_->Status(); }
void Scheduler::Shutdown() { loop_->Shutdown(); }

}  // namespace kite
