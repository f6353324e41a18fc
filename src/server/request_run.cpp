#include "server/request_run.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "runtime/logits_check.h"

namespace kite {

namespace {

double Seconds(RequestRun::Clock::duration duration) {
  return std::chrono::duration<double>(duration).count();
}

}  // namespace

const char* FinishReasonName(FinishReason reason) {
  switch (reason) {
    case FinishReason::kStop:
      return "stop";
    case FinishReason::kLength:
      return "length";
    case FinishReason::kCancelled:
      return "cancelled";
    case FinishReason::kError:
      return "error";
  }
  return "error";
}

RequestRun::RequestRun(RequestId id, ServeRequest request, std::shared_ptr<RequestSink> sink)
    : id_(id), request_(std::move(request)), sink_(std::move(sink)), filter_(request_.stop) {
  usage_.prompt_tokens = static_cast<int32_t>(request_.prompt.size());
}

void RequestRun::Start(const Engine& engine, int32_t slot, int32_t cached, Drafter* drafter,
                       const DraftLimits& limits) {
  const Tokenizer& tokenizer = engine.tokenizer();
  phase_ = Phase::kPrefill;
  slot_ = slot;
  started_ = Clock::now();
  usage_.cached_tokens = cached;
  sampler_.emplace(request_.sampler, tokenizer.vocab_size());
  decoder_.emplace(tokenizer.NewStreamDecoder());
  // The completion is decoded after the prompt's last token, so that a leading space
  // (SentencePiece's "▁") is kept as it is in the whole text.
  previous_token_ = request_.prompt.back();
  if (previous_token_ < tokenizer.vocab_size()) (void)decoder_->Push(previous_token_);
  if (request_.logprobs) logprobs_.emplace(tokenizer, request_.top_logprobs);
  if (drafter != nullptr && !request_.logprobs) {
    drafter->Begin(request_.sampler);
    speculator_.emplace(*drafter, limits, tokenizer.vocab_size());
  }
}

std::span<const int32_t> RequestRun::NextChunk(int32_t position, int32_t chunk) const {
  const std::span<const int32_t> prompt(request_.prompt);
  return prompt.subspan(position, std::min<size_t>(chunk, prompt.size() - position));
}

bool RequestRun::Accept(std::span<const float> logits, const Session& session,
                        const Engine& engine) {
  if (usage_.completion_tokens == 0) first_token_ = Clock::now();
  if (request_.max_tokens == 0) {
    Finish(FinishReason::kLength);
    return false;
  }
  // Embedding rows past the tokenizer's vocabulary (padding) have no text: they are not
  // candidates, as in Session::Generate.
  const std::span<const float> candidates = logits.first(engine.tokenizer().vocab_size());
  if (Status finite = CheckLogitsFinite(candidates, session.n_past()); !finite) {
    Fail(FinishReason::kError, Failure::kInternal, finite.error().message);
    return false;
  }
  const int32_t id = sampler_->Sample(candidates, session.history());
  if (logprobs_ && (request_.ignore_eos || !engine.IsEos(id))) {
    pending_logprobs_.push_back(logprobs_->Report(candidates, previous_token_, id));
  }
  return Take(id, session.n_past(), engine);
}

Result<bool> RequestRun::Speculate(Session& session, const Engine& engine) {
  const int32_t base = session.n_past();
  // Room for the pending token and a draft: the context left and the tokens still wanted
  // (the pending token is counted already), as Session::Generate gives it.
  int32_t room = engine.context_length() - base;
  if (request_.max_tokens >= 0)
    room = std::min(room, request_.max_tokens - usage_.completion_tokens);
  const std::span<const int32_t> chosen =
      KITE_TRY(speculator_->Advance(session, *sampler_, pending_token_, std::max(room, 1)));
  // Token i was chosen after the pending token and the i kept draft tokens before it.
  for (size_t i = 0; i < chosen.size(); ++i) {
    if (!Take(chosen[i], base + 1 + static_cast<int32_t>(i), engine)) return false;
  }
  return true;
}

DraftUsage RequestRun::draft_usage() const {
  if (!speculator_) return {};
  return {.drafted = speculator_->stats().drafted, .accepted = speculator_->stats().accepted};
}

bool RequestRun::Take(int32_t id, int32_t n_past, const Engine& engine) {
  if (!request_.ignore_eos && engine.IsEos(id)) {
    Finish(FinishReason::kStop);
    return false;
  }
  ++usage_.completion_tokens;
  previous_token_ = id;
  Result<std::string> piece = decoder_->Push(id);
  if (!piece) {
    Fail(FinishReason::kError, Failure::kInternal, piece.error().message);
    return false;
  }
  Emit(filter_.Push(*piece));
  if (filter_.stopped()) {
    Finish(FinishReason::kStop);
    return false;
  }
  if ((request_.max_tokens > 0 && usage_.completion_tokens >= request_.max_tokens) ||
      n_past >= engine.context_length()) {
    Finish(FinishReason::kLength);
    return false;
  }
  pending_token_ = id;
  phase_ = Phase::kDecode;
  return true;
}

void RequestRun::Emit(std::string text) {
  if (text.empty()) return;  // logprobs wait for the text they belong to
  TextDelta delta{.text = std::move(text), .logprobs = std::move(pending_logprobs_)};
  pending_logprobs_.clear();
  sink_->OnDelta(std::move(delta));
}

void RequestRun::Finish(FinishReason reason) {
  // Held text: bytes of an unfinished character (as U+FFFD now), or a possible stop string's
  // start that no stop string followed.
  std::string tail;
  if (!filter_.stopped()) {
    tail = filter_.Push(decoder_->Finish());
    if (!filter_.stopped()) tail += filter_.Flush();
  }
  if (!tail.empty() || !pending_logprobs_.empty()) {
    TextDelta delta{.text = std::move(tail), .logprobs = std::move(pending_logprobs_)};
    pending_logprobs_.clear();
    sink_->OnDelta(std::move(delta));
  }
  RequestEnd end;
  end.reason = reason;
  End(std::move(end));
}

void RequestRun::Fail(FinishReason reason, Failure failure, std::string message) {
  RequestEnd end;
  end.reason = reason;
  end.failure = failure;
  end.message = std::move(message);
  End(std::move(end));
}

void RequestRun::End(RequestEnd end) {
  if (phase_ == Phase::kEnded) return;
  const Clock::time_point now = Clock::now();
  end.usage = usage_;
  if (speculator_) end.speculative = draft_usage();
  if (phase_ == Phase::kQueued) {
    end.queue_seconds = Seconds(now - submitted_);
  } else {
    end.queue_seconds = Seconds(started_ - submitted_);
    const bool sampled = first_token_ != Clock::time_point{};
    end.prefill_seconds = Seconds((sampled ? first_token_ : now) - started_);
    if (sampled) end.decode_seconds = Seconds(now - first_token_);
  }
  phase_ = Phase::kEnded;
  finish_reason_ = end.reason;
  ended_.store(true, std::memory_order_release);
  std::shared_ptr<RequestSink> sink = std::move(sink_);
  sink->OnEnd(std::move(end));
}

}  // namespace kite
