// Speculative decoding in the scheduler, on the demo model: greedy requests give the text the
// plain scheduler gives (n-gram drafts, and the model as its own draft), max_tokens and stop
// strings cut exactly where plain decoding cuts even inside a run of kept draft tokens,
// concurrent requests with a drafter per slot do not disturb each other, a request with
// logprobs decodes plainly, a cancel ends a speculative stream, a seed gives the same sampled
// text twice. Runs under ThreadSanitizer (make test-tsan).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <thread>

#include "runtime/speculative_setup.h"
#include "server/scheduler.h"
#include "server/testing.h"

namespace kite {
namespace {

using testing::RecordingSink;

// Members go in reverse order: the scheduler first, then the draft model, then the engine.
struct Served {
  std::unique_ptr<Engine> engine;
  std::unique_ptr<SpeculativeSetup> speculative;
  std::unique_ptr<Scheduler> scheduler;
};

// mode "none": the plain scheduler. "draft": the demo model drafts for itself.
Served Serve(const std::string& mode, int32_t parallel = 2) {
  Served served;
  served.engine = testing::LoadDemo(parallel, /*context=*/1024);
  if (!served.engine) return served;
  RunSettings settings;
  settings.model = KITE_SOURCE_DIR "/models/demo";
  settings.engine = served.engine->options();
  settings.speculative.mode = mode;
  if (mode == "draft") settings.speculative.draft_model = settings.model;
  auto speculative = SpeculativeSetup::Create(settings, *served.engine);
  EXPECT_TRUE(speculative.has_value()) << speculative.error().message;
  if (!speculative) return served;
  served.speculative = std::move(*speculative);
  auto scheduler = Scheduler::Create(*served.engine, {}, served.speculative.get());
  EXPECT_TRUE(scheduler.has_value()) << scheduler.error().message;
  if (scheduler) served.scheduler = std::move(*scheduler);
  return served;
}

// A passage and then its start (bench/speculative_quote.txt): the model's greedy continuation
// copies the passage, which n-gram drafts find in the prompt.
std::vector<int32_t> QuotePrompt(const Engine& engine) {
  std::ifstream file(KITE_SOURCE_DIR "/bench/speculative_quote.txt");
  std::stringstream text;
  text << file.rdbuf();
  auto ids = engine.tokenizer().Encode(text.str(), /*add_special=*/true);
  EXPECT_TRUE(ids.has_value());
  return ids.value_or(std::vector<int32_t>{});
}

ServeRequest Greedy(std::vector<int32_t> prompt, int32_t max_tokens) {
  ServeRequest request;
  request.prompt = std::move(prompt);
  request.max_tokens = max_tokens;
  request.ignore_eos = true;  // every request runs to its max_tokens or stop string
  request.sampler.temperature = 0.0f;
  return request;
}

struct Output {
  std::string text;
  RequestEnd end;
  uint64_t computed = 0;  // tokens the target model computed for it (RunAll)
};

Output Run(Scheduler& scheduler, ServeRequest request) {
  auto sink = std::make_shared<RecordingSink>();
  auto id = scheduler.Submit(std::move(request), sink);
  EXPECT_TRUE(id.has_value()) << id.error().message;
  Output output;
  output.end = sink->WaitEnd();
  output.text = sink->Text();
  return output;
}

// Waits until nothing runs (the loop releases a slot just after the end event).
SchedulerStatus WaitIdle(const Scheduler& scheduler) {
  for (int i = 0; i < 5000; ++i) {
    const SchedulerStatus status = scheduler.Status();
    if (status.active == 0 && status.queued == 0) return status;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ADD_FAILURE() << "the scheduler did not become idle";
  return scheduler.Status();
}

// Every request through one scheduler of `mode` with one slot, one at a time. After each, the
// slot's cache holds no more than the prompt and the completion: draft tokens fed past where
// the request ended are not kept.
std::vector<Output> RunAll(const std::string& mode, const std::vector<ServeRequest>& requests) {
  Served served = Serve(mode, /*parallel=*/1);
  std::vector<Output> outputs;
  if (!served.scheduler) return outputs;
  for (const ServeRequest& request : requests) {
    const uint64_t before = served.engine->tokens_computed();
    outputs.push_back(Run(*served.scheduler, request));
    const SchedulerStatus status = WaitIdle(*served.scheduler);
    outputs.back().computed = served.engine->tokens_computed() - before;
    EXPECT_LE(status.cached_prefix_tokens,
              std::ssize(request.prompt) + outputs.back().end.usage.completion_tokens);
  }
  return outputs;
}

TEST(SchedulerSpeculative, NgramGreedyGivesThePlainTextAndKeepsDrafts) {
  auto engine = testing::LoadDemo(1);
  ASSERT_TRUE(engine);
  const std::vector<ServeRequest> requests = {Greedy(QuotePrompt(*engine), 64)};
  const std::vector<Output> plain = RunAll("none", requests);
  const std::vector<Output> spec = RunAll("ngram", requests);
  ASSERT_EQ(plain.size(), 1u);
  ASSERT_EQ(spec.size(), 1u);
  EXPECT_EQ(spec[0].text, plain[0].text);
  EXPECT_EQ(spec[0].end.usage.completion_tokens, 64);
  EXPECT_FALSE(plain[0].end.speculative.has_value());
  ASSERT_TRUE(spec[0].end.speculative.has_value());
  EXPECT_GT(spec[0].end.speculative->drafted, 0);
  EXPECT_GT(spec[0].end.speculative->accepted, 0);
}

TEST(SchedulerSpeculative, ADraftModelGivesThePlainText) {
  auto engine = testing::LoadDemo(1);
  ASSERT_TRUE(engine);
  const auto heldout = testing::HeldoutPrompts(*engine, 2);
  const std::vector<ServeRequest> requests = {Greedy(QuotePrompt(*engine), 40),
                                              Greedy(heldout[1], 40)};
  const std::vector<Output> plain = RunAll("none", requests);
  const std::vector<Output> spec = RunAll("draft", requests);
  ASSERT_EQ(plain.size(), requests.size());
  ASSERT_EQ(spec.size(), requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    EXPECT_EQ(spec[i].text, plain[i].text) << "request " << i;
    ASSERT_TRUE(spec[i].end.speculative.has_value());
    // Its own draft is always right: every drafted token is kept.
    EXPECT_GT(spec[i].end.speculative->accepted, 0);
    EXPECT_EQ(spec[i].end.speculative->accepted, spec[i].end.speculative->drafted);
  }
}

TEST(SchedulerSpeculative, MaxTokensAndStopStringsCutWherePlainDecodingCuts) {
  auto engine = testing::LoadDemo(1);
  ASSERT_TRUE(engine);
  const std::vector<int32_t> prompt = QuotePrompt(*engine);
  std::vector<ServeRequest> requests;
  for (const int32_t n : {1, 2, 3, 5, 8, 13, 21}) requests.push_back(Greedy(prompt, n));
  // Stop strings taken from the plain continuation every few characters. With the model as
  // its own draft every pass keeps its whole draft (up to --draft-max 8 tokens), so most of
  // them end the text inside a run of kept draft tokens, whose later tokens must not show.
  const std::vector<Output> whole = RunAll("none", {Greedy(prompt, 48)});
  ASSERT_EQ(whole.size(), 1u);
  const std::string& text = whole[0].text;
  ASSERT_GT(text.size(), 60u);
  for (size_t at = 5; at + 4 < text.size(); at += 7) {
    ServeRequest request = Greedy(prompt, 48);
    request.stop = {text.substr(at, 4)};
    requests.push_back(std::move(request));
  }
  const std::vector<Output> plain = RunAll("none", requests);
  ASSERT_EQ(plain.size(), requests.size());
  for (const std::string mode : {"ngram", "draft"}) {
    SCOPED_TRACE(mode);
    const std::vector<Output> spec = RunAll(mode, requests);
    ASSERT_EQ(spec.size(), requests.size());
    int64_t accepted = 0;
    for (size_t i = 0; i < requests.size(); ++i) {
      SCOPED_TRACE("request " + std::to_string(i));
      EXPECT_EQ(spec[i].text, plain[i].text);
      EXPECT_EQ(spec[i].end.reason, plain[i].end.reason);
      EXPECT_EQ(spec[i].end.usage.completion_tokens, plain[i].end.usage.completion_tokens);
      if (requests[i].stop.empty()) {
        EXPECT_EQ(spec[i].end.usage.completion_tokens, requests[i].max_tokens);
        // A pass never feeds past max_tokens: with drafts always kept (nothing fed twice) the
        // model computes what plain decoding does, the prompt and every token but the last.
        if (mode == "draft") {
          EXPECT_EQ(spec[i].computed, plain[i].computed);
        }
      } else {
        EXPECT_EQ(spec[i].text, text.substr(0, text.find(requests[i].stop[0])));
      }
      accepted += spec[i].end.speculative ? spec[i].end.speculative->accepted : 0;
    }
    EXPECT_GT(accepted, 0);
  }
}

TEST(SchedulerSpeculative, ConcurrentRequestsWithADrafterPerSlotGiveWhatTheyGiveAlone) {
  auto engine = testing::LoadDemo(1);
  ASSERT_TRUE(engine);
  const auto heldout = testing::HeldoutPrompts(*engine, 3);
  std::vector<ServeRequest> requests = {Greedy(QuotePrompt(*engine), 40), Greedy(heldout[2], 40),
                                        Greedy(heldout[1], 20)};
  requests[2].logprobs = true;  // decodes plainly, in the batch, beside the speculative ones
  requests[2].top_logprobs = 2;
  const std::vector<Output> alone = RunAll("none", requests);
  ASSERT_EQ(alone.size(), requests.size());
  Served served = Serve("draft", /*parallel=*/3);
  ASSERT_TRUE(served.scheduler);
  std::vector<std::shared_ptr<RecordingSink>> sinks;
  for (const ServeRequest& request : requests) {
    sinks.push_back(std::make_shared<RecordingSink>());
    ASSERT_TRUE(served.scheduler->Submit(request, sinks.back()).has_value());
  }
  for (size_t i = 0; i < requests.size(); ++i) {
    const RequestEnd end = sinks[i]->WaitEnd();
    EXPECT_EQ(sinks[i]->Text(), alone[i].text) << "request " << i;
    EXPECT_EQ(end.speculative.has_value(), !requests[i].logprobs) << "request " << i;
  }
  size_t logprobs = 0;
  for (const TextDelta& delta : sinks[2]->Deltas()) logprobs += delta.logprobs.size();
  EXPECT_EQ(logprobs, 20u);
  const SchedulerStatus status = served.scheduler->Status();
  EXPECT_GT(status.draft_tokens_accepted, 0u);
  EXPECT_LE(status.draft_tokens_accepted, status.draft_tokens);
}

TEST(SchedulerSpeculative, ACancelEndsASpeculativeStream) {
  Served served = Serve("ngram", 1);
  ASSERT_TRUE(served.scheduler);
  auto sink = std::make_shared<RecordingSink>();
  auto id = served.scheduler->Submit(Greedy(QuotePrompt(*served.engine), -1), sink);
  ASSERT_TRUE(id.has_value());
  ASSERT_TRUE(sink->WaitDeltas(3));
  served.scheduler->Cancel(*id);
  const RequestEnd end = sink->WaitEnd();
  EXPECT_EQ(end.reason, FinishReason::kCancelled);
  EXPECT_LT(end.usage.completion_tokens, 1024);
}

TEST(SchedulerSpeculative, ASeedGivesTheSameSampledTextTwiceAndAnotherSeedOtherText) {
  auto engine = testing::LoadDemo(1);
  ASSERT_TRUE(engine);
  ServeRequest request = Greedy(QuotePrompt(*engine), 40);
  request.sampler.temperature = 1.0f;
  request.sampler.seed = 1234;
  ServeRequest other = request;
  other.sampler.seed = 99;
  const std::vector<Output> spec = RunAll("ngram", {request, request, other});
  ASSERT_EQ(spec.size(), 3u);
  EXPECT_EQ(spec[0].text, spec[1].text);
  EXPECT_NE(spec[0].text, spec[2].text);  // the request's sampler draws, with its own seed
  EXPECT_EQ(spec[0].end.usage.completion_tokens, 40);
  ASSERT_TRUE(spec[0].end.speculative.has_value());
  EXPECT_GT(spec[0].end.speculative->drafted, 0);
}

}  // namespace
}  // namespace kite
