// RequestRun fed chosen logits (one token far above the rest, so greedy sampling picks it):
// the streamed text with tokens that split a UTF-8 character, stop strings that span tokens,
// logprobs, and the one end event.
#include "server/request_run.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "runtime/session.h"
#include "server/testing.h"

namespace kite {
namespace {

using testing::RecordingSink;

// The demo tokenizer's byte-fallback pieces: <0xNN> is id 3 + NN.
constexpr int32_t Byte(uint8_t value) { return 3 + value; }

class RequestRunTest : public ::testing::Test {
 protected:
  void SetUp() override {
    engine_ = testing::LoadDemo(1, 64);
    ASSERT_TRUE(engine_);
    session_ = std::make_unique<Session>(*engine_);
    ASSERT_TRUE(session_->Feed(kPrompt).has_value());
  }

  // Logits where `id` wins by far.
  std::vector<float> Forcing(int32_t id) const {
    std::vector<float> logits(engine_->config().vocab, 0.0f);
    logits[id] = 30.0f;
    return logits;
  }

  std::shared_ptr<RequestRun> Start(ServeRequest request, std::shared_ptr<RecordingSink> sink) {
    request.prompt = kPrompt;
    request.sampler.temperature = 0.0f;
    auto run = std::make_shared<RequestRun>(1, std::move(request), sink);
    run->Start(*engine_, 0, 0);
    return run;
  }

  // Feeds the ids as the run's choices; returns whether it still runs after the last.
  bool Force(RequestRun& run, const std::vector<int32_t>& ids) {
    for (int32_t id : ids) {
      if (!run.Accept(Forcing(id), *session_, *engine_)) return false;
    }
    return true;
  }

  Result<std::vector<int32_t>> Encode(const std::string& text) const {
    return engine_->tokenizer().EncodeContinuation(text);
  }

  const std::vector<int32_t> kPrompt{1, 450, 900};
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<Session> session_;
};

TEST_F(RequestRunTest, ACharacterSplitAcrossByteTokensIsSentWhole) {
  auto sink = std::make_shared<RecordingSink>();
  auto run = Start(ServeRequest{}, sink);
  // "€" is E2 82 AC: three byte tokens; "é" is C3 A9.
  ASSERT_TRUE(Force(*run, {Byte(0xE2), Byte(0x82)}));
  EXPECT_TRUE(sink->Deltas().empty());  // nothing of the character yet
  ASSERT_TRUE(Force(*run, {Byte(0xAC), Byte(0xC3)}));
  ASSERT_EQ(sink->Deltas().size(), 1u);
  EXPECT_EQ(sink->Deltas()[0].text, "\xE2\x82\xAC");
  ASSERT_TRUE(Force(*run, {Byte(0xA9)}));
  EXPECT_EQ(sink->Text(), "\xE2\x82\xAC\xC3\xA9");
  // Ended with half a character held: it becomes U+FFFD, never a lone byte.
  ASSERT_TRUE(Force(*run, {Byte(0xE2)}));
  ASSERT_FALSE(Force(*run, {engine_->eos_ids()[0]}));
  const RequestEnd end = sink->WaitEnd();  // checks every delta is valid UTF-8
  EXPECT_EQ(end.reason, FinishReason::kStop);
  EXPECT_EQ(sink->Text(), "\xE2\x82\xAC\xC3\xA9\xEF\xBF\xBD");
  EXPECT_EQ(end.usage.completion_tokens, 6);
  EXPECT_EQ(end.usage.prompt_tokens, 3);
}

TEST_F(RequestRunTest, AStopStringSpanningTokensNeverReachesTheClient) {
  const auto ids = Encode(" the cat sat on the mat");
  ASSERT_TRUE(ids.has_value());
  ServeRequest request;
  request.stop = {"t on t", "cat!"};
  auto sink = std::make_shared<RecordingSink>();
  auto run = Start(std::move(request), sink);
  Force(*run, *ids);
  const RequestEnd end = sink->WaitEnd();
  EXPECT_EQ(end.reason, FinishReason::kStop);
  EXPECT_EQ(sink->Text(), " the cat sa");
  for (const TextDelta& delta : sink->Deltas()) {
    EXPECT_EQ(delta.text.find('!'), std::string::npos);
    EXPECT_EQ(delta.text.find("t on"), std::string::npos) << delta.text;
  }
}

TEST_F(RequestRunTest, TextHeldForAPossibleStopStringIsReleasedWhenItIsNotOne) {
  const auto ids = Encode(" the cat sat");
  ASSERT_TRUE(ids.has_value());
  ServeRequest request;
  request.stop = {"cat sat on"};
  request.max_tokens = static_cast<int32_t>(ids->size());
  auto sink = std::make_shared<RecordingSink>();
  auto run = Start(std::move(request), sink);
  EXPECT_FALSE(Force(*run, *ids));  // ends at max_tokens
  const RequestEnd end = sink->WaitEnd();
  EXPECT_EQ(end.reason, FinishReason::kLength);
  EXPECT_EQ(sink->Text(), " the cat sat");
}

TEST_F(RequestRunTest, LogprobsAreTheLogSoftmaxOfTheLogitsWithTheTopAlternatives) {
  const auto the = Encode(" the");
  ASSERT_TRUE(the.has_value());
  ASSERT_EQ(the->size(), 1u) << "expected one piece for \" the\"";
  const int32_t id = (*the)[0];
  ServeRequest request;
  request.logprobs = true;
  request.top_logprobs = 2;
  auto sink = std::make_shared<RecordingSink>();
  auto run = Start(std::move(request), sink);
  std::vector<float> logits(engine_->config().vocab, 0.0f);
  logits[id] = 3.0f;
  logits[Byte(0xC3)] = 1.0f;
  ASSERT_TRUE(run->Accept(logits, *session_, *engine_));
  const double log_sum = std::log(std::exp(3.0) + std::exp(1.0) + (logits.size() - 2));
  const auto deltas = sink->Deltas();
  ASSERT_EQ(deltas.size(), 1u);
  ASSERT_EQ(deltas[0].logprobs.size(), 1u);
  const TokenLogprobs& lp = deltas[0].logprobs[0];
  EXPECT_EQ(lp.sampled.id, id);
  EXPECT_EQ(lp.sampled.token, " the");  // the leading space kept after the prompt
  EXPECT_NEAR(lp.sampled.logprob, 3.0 - log_sum, 1e-5);
  ASSERT_EQ(lp.top.size(), 2u);
  EXPECT_EQ(lp.top[0].id, id);
  EXPECT_EQ(lp.top[1].id, Byte(0xC3));
  EXPECT_EQ(lp.top[1].token, "\xC3");  // a byte token's raw byte, half a character
  EXPECT_NEAR(lp.top[1].logprob, 1.0 - log_sum, 1e-5);
}

TEST_F(RequestRunTest, EndsOnceWhateverEndsItLater) {
  auto sink = std::make_shared<RecordingSink>();
  auto run = Start(ServeRequest{}, sink);
  run->Fail(FinishReason::kCancelled, Failure::kNone, "");
  run->Fail(FinishReason::kError, Failure::kShutdown, "the server is shutting down");
  const RequestEnd end = sink->WaitEnd();
  EXPECT_EQ(end.reason, FinishReason::kCancelled);
  EXPECT_EQ(sink->ends(), 1);
}

TEST_F(RequestRunTest, NonFiniteLogitsEndTheRequestWithAnError) {
  auto sink = std::make_shared<RecordingSink>();
  auto run = Start(ServeRequest{}, sink);
  std::vector<float> logits(engine_->config().vocab, 0.0f);
  logits[77] = NAN;
  EXPECT_FALSE(run->Accept(logits, *session_, *engine_));
  const RequestEnd end = sink->WaitEnd();
  EXPECT_EQ(end.reason, FinishReason::kError);
  EXPECT_EQ(end.failure, Failure::kInternal);
  EXPECT_NE(end.message.find("token id 77"), std::string::npos) << end.message;
}

}  // namespace
}  // namespace kite
