#include "runtime/session.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <numeric>
#include <optional>

#include "base/seconds_since.h"
#include "runtime/context_limit.h"
#include "runtime/logits_check.h"
#include "runtime/stop_strings.h"

namespace kite {

Session::Session(const Engine& engine) : engine_(engine), sequence_(&engine.kv_pool()) {
  positions_.resize(engine.options().prefill_chunk);
  step_views_.resize(engine.options().prefill_chunk);
  step_order_.resize(engine.options().prefill_chunk);
  std::iota(step_order_.begin(), step_order_.end(), 0);
  history_.reserve(engine.context_length());
  const ModelConfig& config = engine.config();
  for (int32_t layer = 0; layer < config.n_layers; ++layer) {
    sliding_.push_back(config.IsSlidingLayer(layer));
  }
  if (std::find(sliding_.begin(), sliding_.end(), true) != sliding_.end()) {
    window_ = config.sliding_window;
  }
}

void Session::ReleaseOutsideWindows() {
  // The next query (position n_past) sees n_past - window + 1 onwards, and every later one
  // less.
  if (window_ > 0) sequence_.ReleaseBelow(sliding_, n_past() - window_ + 1 - rollback_reserve_);
}

Session::~Session() = default;

Result<std::span<const float>> Session::FeedChunk(std::span<const int32_t> tokens,
                                                  bool all_logits, bool as_decode_steps) {
  const int32_t count = static_cast<int32_t>(tokens.size());
  std::optional<Engine::GraphLease>* lease = &lease_;
  if (as_decode_steps && count > 1) {
    if (std::ssize(step_leases_) <= count) step_leases_.resize(count + 1);
    lease = &step_leases_[count];
  }
  if (!*lease || !(*lease)->Holds(count, all_logits)) {
    lease->reset();  // back to the engine first: it may lend the same state again
    *lease = KITE_TRY(engine_.LeaseGraph(count, all_logits));
  }
  const int32_t start = n_past();
  for (int32_t t = 0; t < count; ++t) positions_[t] = start + t;
  KITE_RETURN_IF_ERROR(sequence_.Resize(start + count));
  RunState& state = (*lease)->state();
  Status status = state.SetInput("tokens", tokens);
  if (status) status = state.SetInput("positions", std::span(positions_).first(count));
  if (status) {
    KvCacheView view = sequence_.batch_view();
    if (as_decode_steps) {
      // The rows' pages exist now (Resize above): every "sequence" is this one, so each token
      // writes its row and then attends up to its own position, as the kernels run a batched
      // decode step.
      std::fill_n(step_views_.begin(), count, sequence_.view());
      view = {.sequences = std::span(step_views_).first(count),
              .token_sequence = std::span(step_order_).first(count)};
    }
    status = (*lease)->Run({.kv_cache = &view, .observer = observer_});
  }
  if (!status) {
    (void)sequence_.Resize(start);  // shrinking cannot fail
    return std::unexpected(std::move(status.error()));
  }
  history_.insert(history_.end(), tokens.begin(), tokens.end());
  ReleaseOutsideWindows();
  return state.OutputF32(0);
}

Status Session::CheckFeed(std::span<const int32_t> tokens) const {
  if (tokens.empty()) return InvalidInput("no tokens to feed");
  const int32_t vocab = engine_.config().vocab;
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] < 0 || tokens[i] >= vocab) {
      return InvalidInput("token " + std::to_string(i) + " is id " + std::to_string(tokens[i]) +
                          ", outside the model's vocabulary [0, " + std::to_string(vocab) + ")");
    }
  }
  return CheckContextRoom("the input", n_past(), std::ssize(tokens), engine_.context_length());
}

Result<std::span<const float>> Session::FeedChunks(std::span<const int32_t> tokens, bool all_logits,
                                                   const std::atomic<bool>* cancel) {
  const int32_t vocab = engine_.config().vocab;
  const size_t chunk = engine_.options().prefill_chunk;
  if (all_logits) all_logits_.resize(tokens.size() * vocab);
  std::span<const float> logits;
  for (size_t begin = 0; begin < tokens.size(); begin += chunk) {
    if (cancel != nullptr && cancel->load(std::memory_order_relaxed))
      return std::span<const float>();
    const size_t count = std::min(chunk, tokens.size() - begin);
    logits = KITE_TRY(FeedChunk(tokens.subspan(begin, count), all_logits));  // [count|1, vocab]
    if (all_logits) std::copy(logits.begin(), logits.end(), all_logits_.begin() + begin * vocab);
  }
  if (all_logits) return std::span<const float>(all_logits_);
  return logits;
}

Result<std::span<const float>> Session::Feed(std::span<const int32_t> tokens, bool all_logits) {
  KITE_RETURN_IF_ERROR(CheckFeed(tokens));
  return FeedChunks(tokens, all_logits, nullptr);
}

Result<std::span<const float>> Session::FeedAsDecodeSteps(std::span<const int32_t> tokens) {
  KITE_RETURN_IF_ERROR(CheckFeed(tokens));
  if (std::ssize(tokens) > engine_.options().prefill_chunk) {
    return InvalidInput("feeding " + std::to_string(tokens.size()) +
                        " tokens as decode steps in one run; at most the prefill chunk, " +
                        std::to_string(engine_.options().prefill_chunk));
  }
  return FeedChunk(tokens, /*all_logits=*/true, /*as_decode_steps=*/true);
}

void Session::Truncate(int32_t length) {
  // A query at `length` would see from length - window + 1: rows a sliding window released
  // there cannot return, so the history goes whole.
  if (sequence_.released() > 0 && length - window_ + 1 < sequence_.released()) length = 0;
  history_.resize(std::min<size_t>(history_.size(), std::max(length, 0)));
  (void)sequence_.Resize(n_past());  // shrinking cannot fail
}

int32_t Session::ReusePrefix(std::span<const int32_t> ids) {
  const size_t limit = std::min(history_.size(), ids.empty() ? 0 : ids.size() - 1);
  const size_t common =
      std::mismatch(history_.begin(), history_.begin() + limit, ids.begin()).first -
      history_.begin();
  Truncate(static_cast<int32_t>(common));
  return n_past();  // less than `common` when a sliding window released its rows
}

Result<Session::PromptResult> Session::FeedPrompt(std::span<const int32_t> ids) {
  return FeedPromptUntil(ids, nullptr);
}

Result<Session::PromptResult> Session::FeedPromptUntil(std::span<const int32_t> ids,
                                                       const std::atomic<bool>* cancel) {
  if (ids.empty()) return InvalidInput("the prompt is empty");
  // Before the cut, so that a prompt that cannot fit leaves the history alone.
  KITE_RETURN_IF_ERROR(
      CheckContextRoom("the prompt", 0, std::ssize(ids), engine_.context_length()));
  PromptResult result;
  result.reused = ReusePrefix(ids);
  const std::span<const int32_t> rest = ids.subspan(result.reused);
  KITE_RETURN_IF_ERROR(CheckFeed(rest));
  result.logits = KITE_TRY(FeedChunks(rest, false, cancel));
  return result;
}

Status Session::CopyPrefixFrom(const Session& other, int32_t length) {
  if (&other.engine_ != &engine_) {
    return InvalidInput("copying a prefix from a session of another engine");
  }
  if (length < 0 || length > other.n_past()) {
    return InvalidInput("copying a prefix of " + std::to_string(length) +
                        " tokens from a session that holds " + std::to_string(other.n_past()));
  }
  if (&other == this) {
    Truncate(length);
    return Ok();
  }
  if (other.sequence_.released() > 0 && length - window_ + 1 < other.sequence_.released()) {
    return InvalidInput("copying a prefix of " + std::to_string(length) +
                        " tokens whose last window's KV rows the sliding window released");
  }
  KITE_RETURN_IF_ERROR(sequence_.CopyFrom(other.sequence_, length));
  history_.assign(other.history_.begin(), other.history_.begin() + length);
  return Ok();
}

void Session::Reset() {
  history_.clear();
  (void)sequence_.Resize(0);  // shrinking cannot fail
}

Result<Session::GenerateResult> Session::Generate(std::span<const int32_t> prompt_ids,
                                                  const GenerateOptions& options) {
  if (prompt_ids.empty()) return InvalidInput("the prompt is empty");
  const Tokenizer& tokenizer = engine_.tokenizer();
  GenerateResult result;
  result.prompt_tokens = static_cast<int32_t>(prompt_ids.size());
  rollback_reserve_ = options.drafter != nullptr ? options.draft_limits.draft_max : 0;

  auto start = std::chrono::steady_clock::now();
  const PromptResult prompt = KITE_TRY(FeedPromptUntil(prompt_ids, options.cancel));
  result.prefill_seconds = SecondsSince(start);
  result.reused_tokens = prompt.reused;
  result.prefill_tokens = result.prompt_tokens - prompt.reused;
  // A cancelled call keeps only the prefix it reused: its pages go back to the pool.
  auto cancelled = [&] {
    Truncate(prompt.reused);
    result.stop_reason = "cancelled";
    return result;
  };
  if (prompt.logits.empty()) return cancelled();

  // Embedding rows past the tokenizer's vocabulary (padding to a multiple of 64 or 128) have no
  // text: the sampler sees only the tokenizer's ids, as if the others' logits were -inf.
  const int32_t n_tokens = tokenizer.vocab_size();
  Sampler sampler(options.sampler, n_tokens);
  Tokenizer::StreamDecoder decoder = tokenizer.NewStreamDecoder();
  // The continuation's text is decoded after the prompt's last token, so that a leading space
  // (SentencePiece's "▁") is kept as it would be in the whole text.
  if (prompt_ids.back() < tokenizer.vocab_size()) (void)decoder.Push(prompt_ids.back());
  StopStringFilter filter(options.stop_strings);
  auto emit = [&](int32_t id, const std::string& text) {
    result.text += text;
    return !options.on_token || options.on_token(id, text);
  };

  std::span<const float> logits = prompt.logits;
  std::optional<Speculator> speculator;
  if (options.drafter != nullptr) {
    options.drafter->Begin(options.sampler);
    speculator.emplace(*options.drafter, options.draft_limits, n_tokens);
  }
  // Tokens a verification pass chose ahead; all but the last are already in the history.
  std::span<const int32_t> chosen;
  size_t next_chosen = 0;
  // A pass may have fed tokens past the one generation stopped at (an EOS, a stop string):
  // the history keeps what was emitted, as plain decoding's does.
  auto finish = [&]() -> GenerateResult& {
    if (speculator) {
      const int32_t emitted = static_cast<int32_t>(prompt_ids.size() + result.ids.size());
      if (n_past() > emitted) Truncate(emitted);
      result.speculative = speculator->stats();
    }
    return result;
  };
  result.stop_reason = "max_tokens";
  for (int32_t step = 0; options.max_tokens < 0 || step < options.max_tokens; ++step) {
    int32_t id;
    if (next_chosen < chosen.size()) {
      id = chosen[next_chosen++];
    } else {
      const std::span<const float> candidates = logits.first(n_tokens);  // [n_tokens]
      KITE_RETURN_IF_ERROR(CheckLogitsFinite(candidates, n_past()));
      id = sampler.Sample(candidates, history_);
    }
    const bool fed = next_chosen < chosen.size();  // a pass fed it with the draft
    if (!options.ignore_eos && engine_.IsEos(id)) {
      result.stop_reason = "eos";
      break;
    }
    result.ids.push_back(id);
    if (!emit(id, filter.Push(KITE_TRY(decoder.Push(id))))) {
      result.stop_reason = "callback";
      return finish();
    }
    if (filter.stopped()) {
      result.stop_reason = "stop_string";
      return finish();
    }
    if (step + 1 == options.max_tokens) break;
    if (fed) continue;
    if (n_past() >= engine_.context_length()) {
      result.stop_reason = "context_full";
      break;
    }
    if (options.cancel != nullptr && options.cancel->load(std::memory_order_relaxed)) {
      finish();
      return cancelled();
    }
    start = std::chrono::steady_clock::now();
    if (speculator) {
      const int32_t past = n_past();
      // Room for `id` and a draft: the context left, and no more tokens than are still wanted.
      int32_t room = engine_.context_length() - past;
      if (options.max_tokens >= 0) room = std::min(room, options.max_tokens - step - 1);
      chosen = KITE_TRY(speculator->Advance(*this, sampler, id, std::max(room, 1)));
      next_chosen = 0;
      result.decode_tokens += n_past() - past;
    } else {
      logits = KITE_TRY(Feed(std::span(&id, 1)));
      ++result.decode_tokens;
    }
    result.decode_seconds += SecondsSince(start);
  }
  // Text still held: bytes of an unfinished character, or a possible stop string's start.
  std::string tail = filter.Push(decoder.Finish());
  if (filter.stopped()) {
    result.stop_reason = "stop_string";
  } else {
    tail += filter.Flush();
  }
  if (!tail.empty() && !emit(-1, tail)) result.stop_reason = "callback";
  return finish();
}

}  // namespace kite
