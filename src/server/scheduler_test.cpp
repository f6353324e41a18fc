// The scheduler on the demo model: outputs among many equal to each request alone, prefix
// reuse counted in computed tokens, cancellation within a step or a chunk, the bounded queue,
// round robin across clients, deadlines, shutdown, stop strings; every request hears exactly
// one end event (RecordingSink checks it). Runs under ThreadSanitizer (make test-tsan).
#include "server/scheduler.h"

#include <gtest/gtest.h>

#include <thread>

#include "runtime/session.h"
#include "server/testing.h"

namespace kite {
namespace {

using std::chrono::milliseconds;
using testing::RecordingSink;

ServeRequest Greedy(std::vector<int32_t> prompt, int32_t max_tokens, std::string client = "") {
  ServeRequest request;
  request.prompt = std::move(prompt);
  request.max_tokens = max_tokens;
  request.sampler.temperature = 0.0f;
  request.client = std::move(client);
  return request;
}

// The demo model and a scheduler on it (destroyed first: members go in reverse order). The
// context (past the trained 256: only a warning) lets a stream that ignores end-of-text run
// until the test stops it, however slowly the test's thread is scheduled.
struct Served {
  std::unique_ptr<Engine> engine;
  std::unique_ptr<Scheduler> scheduler;
};
Served Serve(int32_t parallel, int32_t context = 1024, int32_t prefill_chunk = 16,
             SchedulerOptions options = {}) {
  Served served;
  served.engine = testing::LoadDemo(parallel, context, prefill_chunk);
  if (!served.engine) return served;
  auto scheduler = Scheduler::Create(*served.engine, options);
  EXPECT_TRUE(scheduler.has_value()) << scheduler.error().message;
  if (scheduler) served.scheduler = std::move(*scheduler);
  return served;
}

RequestId SubmitOk(Scheduler& scheduler, ServeRequest request, std::shared_ptr<RequestSink> sink) {
  auto id = scheduler.Submit(std::move(request), std::move(sink));
  EXPECT_TRUE(id.has_value()) << id.error().message;
  return id.value_or(0);
}

// Waits until nothing runs or waits (the loop releases a slot just after the end event).
void WaitIdle(const Scheduler& scheduler) {
  for (int i = 0; i < 5000; ++i) {
    const SchedulerStatus status = scheduler.Status();
    if (status.active == 0 && status.queued == 0) return;
    std::this_thread::sleep_for(milliseconds(1));
  }
  ADD_FAILURE() << "the scheduler did not become idle";
}

TEST(Scheduler, SixteenRequestsAtOnceEachGiveWhatTheyGiveAlone) {
  constexpr int32_t kRequests = 16, kTokens = 20;
  auto [engine, scheduler] = Serve(kRequests);
  ASSERT_TRUE(scheduler);
  const auto prompts = testing::HeldoutPrompts(*engine, kRequests);
  // Alone: the runtime's own generation loop, one session at a time.
  std::vector<std::string> alone(kRequests);
  for (int32_t i = 0; i < kRequests; ++i) {
    Session session(*engine);
    Session::GenerateOptions options;
    options.max_tokens = kTokens;
    options.sampler.temperature = 0.0f;
    auto result = session.Generate(prompts[i], options);
    ASSERT_TRUE(result.has_value()) << result.error().message;
    alone[i] = result->text;
  }

  std::vector<std::shared_ptr<RecordingSink>> sinks;
  for (int32_t i = 0; i < kRequests; ++i) sinks.push_back(std::make_shared<RecordingSink>());
  // From four threads at once.
  std::vector<std::thread> threads;
  for (int32_t t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int32_t i = t; i < kRequests; i += 4) {
        SubmitOk(*scheduler, Greedy(prompts[i], kTokens, "client" + std::to_string(t)), sinks[i]);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (int32_t i = 0; i < kRequests; ++i) {
    const RequestEnd end = sinks[i]->WaitEnd();
    EXPECT_NE(end.reason, FinishReason::kError) << end.message;
    EXPECT_EQ(sinks[i]->Text(), alone[i]) << "request " << i;
  }
  WaitIdle(*scheduler);  // the loop counts a request just after its end event
  const SchedulerStatus status = scheduler->Status();
  // Fewer graph runs than tokens: steps carried several requests.
  EXPECT_LT(status.decode_steps, status.completion_tokens - kRequests);
  EXPECT_EQ(status.requests_finished, static_cast<uint64_t>(kRequests));
}

TEST(Scheduler, ASharedPrefixIsComputedOnceAndReportedAsCached) {
  auto [engine, scheduler] = Serve(2);
  ASSERT_TRUE(scheduler);
  const auto prompts = testing::HeldoutPrompts(*engine, 3, 40);
  std::vector<int32_t> system = prompts[0];  // the shared "system prompt"
  auto with = [&](const std::vector<int32_t>& tail) {
    std::vector<int32_t> prompt = system;
    prompt.insert(prompt.end(), tail.begin() + 1, tail.begin() + 11);  // without its BOS
    return prompt;
  };
  const std::vector<int32_t> first = with(prompts[1]), second = with(prompts[2]);
  // One token each: sampled from the prompt's logits, never fed, so computed = prompt - cached.
  auto run = [&](const std::vector<int32_t>& prompt) {
    const uint64_t before = engine->tokens_computed();
    auto sink = std::make_shared<RecordingSink>();
    SubmitOk(*scheduler, Greedy(prompt, 1), sink);
    const RequestEnd end = sink->WaitEnd();
    EXPECT_EQ(end.reason, FinishReason::kLength) << end.message;
    WaitIdle(*scheduler);
    return std::make_pair(end.usage.cached_tokens, engine->tokens_computed() - before);
  };
  auto [cached, computed] = run(first);
  EXPECT_EQ(cached, 0);
  EXPECT_EQ(computed, first.size());
  // Another tail: the system prompt's rows (and any tokens the tails share) are copied into
  // the free slot.
  const int32_t shared = static_cast<int32_t>(
      std::mismatch(first.begin(), first.end(), second.begin()).first - first.begin());
  ASSERT_GE(shared, std::ssize(system));
  std::tie(cached, computed) = run(second);
  EXPECT_EQ(cached, shared);
  EXPECT_EQ(computed, second.size() - shared);
  // The first prompt again: in place, all but its last token.
  std::tie(cached, computed) = run(first);
  EXPECT_EQ(cached, std::ssize(first) - 1);
  EXPECT_EQ(computed, 1u);
  const SchedulerStatus status = scheduler->Status();
  EXPECT_EQ(status.cached_prompt_tokens, shared + first.size() - 1);
  EXPECT_EQ(status.cached_prefix_tokens, std::ssize(first) + std::ssize(second));
}

TEST(Scheduler, CancelEndsARunningRequestWithinOneStepAndReturnsItsPages) {
  auto [engine, scheduler] = Serve(2);
  ASSERT_TRUE(scheduler);
  const auto prompts = testing::HeldoutPrompts(*engine, 2, 20);
  ServeRequest request = Greedy(prompts[0], -1);
  request.ignore_eos = true;  // would run until the context is full
  auto sink = std::make_shared<RecordingSink>();
  const RequestId id = SubmitOk(*scheduler, request, sink);
  ASSERT_TRUE(sink->WaitDeltas(3));
  const uint64_t steps = scheduler->Status().decode_steps;
  EXPECT_TRUE(scheduler->Cancel(id));
  const RequestEnd end = sink->WaitEnd();
  EXPECT_EQ(end.reason, FinishReason::kCancelled);
  // The step in flight when Cancel came may finish; no other starts.
  EXPECT_LE(scheduler->Status().decode_steps, steps + 1);
  EXPECT_FALSE(scheduler->Cancel(id));  // ended: no second end
  WaitIdle(*scheduler);
  // The generated tokens' rows went back to the pool; the prompt's stay cached.
  const SchedulerStatus status = scheduler->Status();
  const int64_t page = engine->options().kv_page_size;
  const int64_t prompt_pages =
      (std::ssize(prompts[0]) + page - 1) / page * engine->config().n_layers;
  EXPECT_EQ(status.kv_pages_used, prompt_pages);
  EXPECT_EQ(status.cached_prefix_tokens, std::ssize(prompts[0]));
  EXPECT_EQ(status.requests_cancelled, 1u);
}

TEST(Scheduler, CancelDuringALongPromptStopsItsPrefillWithinAChunk) {
  constexpr int32_t kChunk = 4;  // 250 chunks: the prompt is still being computed at Cancel
  auto [engine, scheduler] = Serve(1, 1024, kChunk);
  ASSERT_TRUE(scheduler);
  std::vector<int32_t> prompt(1000);
  for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = 300 + static_cast<int32_t>(i % 3000);
  const uint64_t before = engine->tokens_computed();
  auto sink = std::make_shared<RecordingSink>();
  const RequestId id = SubmitOk(*scheduler, Greedy(prompt, 4), sink);
  while (engine->tokens_computed() == before) std::this_thread::yield();  // prefill began
  const uint64_t at_cancel = engine->tokens_computed();
  scheduler->Cancel(id);
  const RequestEnd end = sink->WaitEnd();
  EXPECT_EQ(end.reason, FinishReason::kCancelled);
  EXPECT_EQ(end.usage.completion_tokens, 0);
  // The chunk in flight may finish; no other starts.
  EXPECT_LE(engine->tokens_computed() - at_cancel, static_cast<uint64_t>(kChunk));
  WaitIdle(*scheduler);
}

TEST(Scheduler, ALongPromptDoesNotStallTheStreamsAlreadyRunning) {
  constexpr int32_t kChunk = 8;
  auto [engine, scheduler] = Serve(2, 1024, kChunk);
  ASSERT_TRUE(scheduler);
  const auto prompts = testing::HeldoutPrompts(*engine, 1, 10);
  ServeRequest streaming = Greedy(prompts[0], -1);
  streaming.ignore_eos = true;
  auto stream = std::make_shared<RecordingSink>();
  const RequestId stream_id = SubmitOk(*scheduler, streaming, stream);
  ASSERT_TRUE(stream->WaitDeltas(1));
  std::vector<int32_t> long_prompt(480);
  for (size_t i = 0; i < long_prompt.size(); ++i) long_prompt[i] = 300 + static_cast<int32_t>(i);
  auto late = std::make_shared<RecordingSink>();
  const size_t before = stream->Deltas().size();
  SubmitOk(*scheduler, Greedy(long_prompt, 1), late);
  late->WaitEnd();
  // Decode steps and prefill chunks alternate: the stream got about a token per chunk of the
  // 60 while the long prompt was computed (a few tokens may release no text by themselves).
  EXPECT_GE(stream->Deltas().size() - before, 48u);
  scheduler->Cancel(stream_id);
  EXPECT_EQ(stream->WaitEnd().reason, FinishReason::kCancelled);
}

TEST(Scheduler, AFullQueueRefusesAtOnceWithRetryAfter) {
  auto [engine, scheduler] =
      Serve(1, 1024, 16, {.max_queue = 2, .prefill_chunk = 0, .retry_after_seconds = 3});
  ASSERT_TRUE(scheduler);
  const auto prompts = testing::HeldoutPrompts(*engine, 1, 10);
  ServeRequest blocker = Greedy(prompts[0], -1);
  blocker.ignore_eos = true;
  auto running = std::make_shared<RecordingSink>();
  const RequestId running_id = SubmitOk(*scheduler, blocker, running);
  ASSERT_TRUE(running->WaitDeltas(1));
  std::vector<std::shared_ptr<RecordingSink>> waiting;
  for (int i = 0; i < 2; ++i) {
    waiting.push_back(std::make_shared<RecordingSink>());
    SubmitOk(*scheduler, Greedy(prompts[0], 2), waiting.back());
  }
  auto refused_sink = std::make_shared<RecordingSink>();
  const auto refused = scheduler->Submit(Greedy(prompts[0], 2), refused_sink);
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().kind, SubmitRefusal::kOverloaded);
  EXPECT_EQ(refused.error().retry_after_seconds, 3);
  EXPECT_NE(refused.error().message.find("max_queue 2"), std::string::npos)
      << refused.error().message;
  SchedulerStatus status = scheduler->Status();
  EXPECT_EQ(status.active, 1);
  EXPECT_EQ(status.queued, 2);
  EXPECT_EQ(status.requests_refused, 1u);

  scheduler->Cancel(running_id);
  EXPECT_EQ(running->WaitEnd().reason, FinishReason::kCancelled);
  for (auto& sink : waiting) EXPECT_EQ(sink->WaitEnd().reason, FinishReason::kLength);
  EXPECT_EQ(refused_sink->ends(), 0);  // a refused request is never heard from
}

TEST(Scheduler, BadRequestsAreRefusedWithTheReason) {
  auto [engine, scheduler] = Serve(1, 64);
  ASSERT_TRUE(scheduler);
  auto sink = std::make_shared<RecordingSink>();
  auto refusal = [&](ServeRequest request) {
    auto id = scheduler->Submit(std::move(request), sink);
    EXPECT_FALSE(id.has_value());
    return id ? SubmitRefusal{} : id.error();
  };
  EXPECT_EQ(refusal(Greedy({}, 1)).message, "the prompt is empty");
  const SubmitRefusal bad_id = refusal(Greedy({1, 5, 4096}, 1));
  EXPECT_EQ(bad_id.kind, SubmitRefusal::kInvalid);
  EXPECT_NE(bad_id.message.find("prompt token 2 is id 4096"), std::string::npos) << bad_id.message;
  const SubmitRefusal too_long = refusal(Greedy(std::vector<int32_t>(65, 7), 1));
  EXPECT_NE(too_long.message.find("65 tokens"), std::string::npos) << too_long.message;
  ServeRequest top = Greedy({1, 5}, 1);
  top.logprobs = true;
  top.top_logprobs = 21;
  EXPECT_NE(refusal(top).message.find("top_logprobs 21"), std::string::npos);
  EXPECT_EQ(sink->ends(), 0);
}

TEST(Scheduler, WaitingRequestsAreAdmittedRoundRobinAcrossClients) {
  auto [engine, scheduler] = Serve(1);
  ASSERT_TRUE(scheduler);
  const auto prompts = testing::HeldoutPrompts(*engine, 1, 10);
  ServeRequest blocker = Greedy(prompts[0], -1, "a");
  blocker.ignore_eos = true;
  auto running = std::make_shared<RecordingSink>();
  const RequestId running_id = SubmitOk(*scheduler, blocker, running);
  ASSERT_TRUE(running->WaitDeltas(1));
  // With one slot, requests run one after the other: their ends come in admission order.
  auto log = std::make_shared<std::vector<std::string>>();
  auto log_mutex = std::make_shared<std::mutex>();
  std::vector<std::shared_ptr<RecordingSink>> sinks;
  for (const std::string name : {"a1", "a2", "a3", "b1", "a4", "c1", "b2"}) {
    sinks.push_back(std::make_shared<RecordingSink>(name, log, log_mutex));
    ServeRequest request = Greedy(prompts[0], 2, name.substr(0, 1));
    request.ignore_eos = true;
    SubmitOk(*scheduler, request, sinks.back());
  }
  scheduler->Cancel(running_id);
  running->WaitEnd();
  for (auto& sink : sinks) sink->WaitEnd();
  EXPECT_EQ(*log, (std::vector<std::string>{"a1", "b1", "c1", "a2", "b2", "a3", "a4"}));
}

TEST(Scheduler, ADeadlineEndsARequestWhileItWaits) {
  auto [engine, scheduler] = Serve(1);
  ASSERT_TRUE(scheduler);
  const auto prompts = testing::HeldoutPrompts(*engine, 1, 10);
  ServeRequest blocker = Greedy(prompts[0], -1);
  blocker.ignore_eos = true;  // holds the one slot until cancelled
  auto running = std::make_shared<RecordingSink>();
  const RequestId running_id = SubmitOk(*scheduler, blocker, running);
  ASSERT_TRUE(running->WaitDeltas(1));
  ServeRequest queued = Greedy(prompts[0], 2);
  queued.deadline = std::chrono::steady_clock::now() + milliseconds(1);
  auto queued_sink = std::make_shared<RecordingSink>();
  SubmitOk(*scheduler, queued, queued_sink);
  const RequestEnd end = queued_sink->WaitEnd();
  EXPECT_EQ(end.reason, FinishReason::kError);
  EXPECT_EQ(end.failure, Failure::kDeadline);
  EXPECT_EQ(end.usage.completion_tokens, 0);
  EXPECT_NE(end.message.find("waited for a slot"), std::string::npos) << end.message;
  scheduler->Cancel(running_id);
  EXPECT_EQ(running->WaitEnd().reason, FinishReason::kCancelled);
}

TEST(Scheduler, ADeadlineEndsARunningRequest) {
  auto [engine, scheduler] = Serve(1);
  ASSERT_TRUE(scheduler);
  const auto prompts = testing::HeldoutPrompts(*engine, 1, 10);
  ServeRequest request = Greedy(prompts[0], -1);
  request.ignore_eos = true;  // about 1000 tokens: far more than 50 ms allow
  request.deadline = std::chrono::steady_clock::now() + milliseconds(50);
  auto sink = std::make_shared<RecordingSink>();
  SubmitOk(*scheduler, request, sink);
  const RequestEnd end = sink->WaitEnd();
  EXPECT_EQ(end.reason, FinishReason::kError);
  EXPECT_EQ(end.failure, Failure::kDeadline);
  EXPECT_LT(end.usage.completion_tokens, 1000);
  EXPECT_NE(end.message.find("deadline"), std::string::npos) << end.message;
}

TEST(Scheduler, AStopStringAcrossDeltasNeverLeaks) {
  auto [engine, scheduler] = Serve(1);
  ASSERT_TRUE(scheduler);
  const auto prompts = testing::HeldoutPrompts(*engine, 4, 20);
  auto free_run = std::make_shared<RecordingSink>();
  ServeRequest request = Greedy(prompts[3], 40);
  request.ignore_eos = true;
  SubmitOk(*scheduler, request, free_run);
  free_run->WaitEnd();
  const std::string text = free_run->Text();
  // A stop string that starts in one delta and ends in the next.
  size_t boundary = 0, at = std::string::npos;
  for (const TextDelta& delta : free_run->Deltas()) {
    boundary += delta.text.size();
    if (boundary >= 10 && boundary + 2 < text.size() &&
        text.find(text.substr(boundary - 2, 4)) == boundary - 2) {
      at = boundary - 2;
      break;
    }
  }
  ASSERT_NE(at, std::string::npos) << text;
  request.stop = {text.substr(at, 4)};
  auto stopped = std::make_shared<RecordingSink>();
  SubmitOk(*scheduler, request, stopped);
  const RequestEnd end = stopped->WaitEnd();
  EXPECT_EQ(end.reason, FinishReason::kStop);
  EXPECT_EQ(stopped->Text(), text.substr(0, at)) << "stop " << request.stop[0];
}

TEST(Scheduler, ShutdownEndsEveryStreamAndRefusesNewRequests) {
  auto [engine, scheduler] =
      Serve(2, 1024, 16, {.max_queue = 4, .prefill_chunk = 0, .retry_after_seconds = 1});
  ASSERT_TRUE(scheduler);
  const auto prompts = testing::HeldoutPrompts(*engine, 4, 12);
  std::vector<std::shared_ptr<RecordingSink>> sinks;
  for (const auto& prompt : prompts) {
    ServeRequest request = Greedy(prompt, -1);
    request.ignore_eos = true;
    sinks.push_back(std::make_shared<RecordingSink>());
    SubmitOk(*scheduler, request, sinks.back());
  }
  ASSERT_TRUE(sinks[0]->WaitDeltas(1));
  scheduler->Shutdown();
  for (auto& sink : sinks) {
    EXPECT_EQ(sink->ends(), 1);  // Shutdown returned after every end event
    const RequestEnd end = sink->WaitEnd();
    EXPECT_EQ(end.failure, Failure::kShutdown);
  }
  const auto refused = scheduler->Submit(Greedy(prompts[0], 1), std::make_shared<RecordingSink>());
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().kind, SubmitRefusal::kShuttingDown);
  scheduler->Shutdown();  // idempotent
}

}  // namespace
}  // namespace kite
