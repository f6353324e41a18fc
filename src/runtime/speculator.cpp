#include "runtime/speculator.h"

#include <algorithm>
#include <chrono>

#include "base/seconds_since.h"
#include "runtime/logits_check.h"
#include "runtime/session.h"

namespace kite {

Speculator::Speculator(Drafter& drafter, DraftLimits limits, int32_t n_tokens)
    : drafter_(drafter), limits_(limits), n_tokens_(n_tokens), length_(limits) {}

Result<std::span<const int32_t>> Speculator::Advance(Session& session, Sampler& sampler,
                                                     int32_t id, int32_t room) {
  auto start = std::chrono::steady_clock::now();  // drafting is part of a pass's price
  const int32_t base = session.n_past();
  const int32_t vocab = session.engine().config().vocab;
  const bool greedy = sampler.config().temperature <= 0.0f;
  chosen_.clear();

  const Draft* draft = nullptr;
  // One run carries `id` and the draft: at most a prefill chunk.
  room = std::min(room, session.engine().options().prefill_chunk);
  if (const int32_t want = std::min(length_.Next(), room - 1); want >= limits_.draft_min) {
    // What the drafter lacks of the history is fed before the pass's clock starts
    // (Drafter::Follow): after the prompt or a pause, a draft model's catching up would price
    // this one pass's length far above its like.
    const int32_t followed = KITE_TRY(drafter_.Follow(session.history()));
    length_.CaughtUp(followed, greedy ? SecondsSince(start) : 0.0);
    start = std::chrono::steady_clock::now();
    context_.assign(session.history().begin(), session.history().end());
    context_.push_back(id);
    draft = KITE_TRY(drafter_.Propose(context_, want));
    if (std::ssize(draft->tokens) < limits_.draft_min) draft = nullptr;
  }
  if (draft == nullptr) {
    ++stats_.plain_steps;
    const std::span<const float> logits = KITE_TRY(session.Feed(std::span(&id, 1)));
    const std::span<const float> candidates = logits.first(n_tokens_);  // [n_tokens]
    KITE_RETURN_IF_ERROR(CheckLogitsFinite(candidates, session.n_past()));
    chosen_.push_back(sampler.Sample(candidates, session.history()));
    const double seconds = SecondsSince(start);
    length_.PlainStep(greedy ? seconds : 0.0);
    stats_.plain_seconds += seconds;
    return std::span<const int32_t>(chosen_);
  }

  const int32_t drafted = static_cast<int32_t>(std::min<size_t>(draft->tokens.size(), room - 1));
  fed_.assign(1, id);
  fed_.insert(fed_.end(), draft->tokens.begin(), draft->tokens.begin() + drafted);
  // [drafted + 1, vocab]: row j predicts the token after fed_[j].
  const std::span<const float> rows = KITE_TRY(session.FeedAsDecodeSteps(fed_));
  const std::span<const int32_t> history = session.history();
  auto distribution = [&](int32_t row) -> Result<std::span<const TokenProb>> {
    const std::span<const float> candidates = rows.subspan(size_t(row) * vocab, n_tokens_);
    KITE_RETURN_IF_ERROR(CheckLogitsFinite(candidates, base + row + 1));
    return sampler.Distribution(candidates, history.first(base + row + 1));
  };
  int32_t accepted = 0;
  bool rejected = false;
  for (; accepted < drafted; ++accepted) {
    const std::span<const TokenProb> p = KITE_TRY(distribution(accepted));
    const int32_t guess = draft->tokens[accepted];
    Verdict verdict;
    if (greedy) {
      verdict = {.accepted = p.front().id == guess, .token = p.front().id};
    } else {
      const std::span<const TokenProb> q =
          draft->distributions.empty() ? std::span<const TokenProb>()
                                       : std::span<const TokenProb>(draft->distributions[accepted]);
      const double u_accept = sampler.Uniform();
      const double u_resample = sampler.Uniform();
      verdict = rule_.Judge(p, q, guess, u_accept, u_resample);
    }
    chosen_.push_back(verdict.token);
    if (!verdict.accepted) {
      rejected = true;
      break;
    }
  }
  if (!rejected) {  // every draft token kept: the last row gives one more for free
    const std::span<const TokenProb> p = KITE_TRY(distribution(drafted));
    chosen_.push_back(greedy ? p.front().id : sampler.Draw(p));
  }
  // The rejected draft tokens' KV rows go; `id` and the kept ones stay.
  session.Truncate(base + 1 + accepted);
  length_.Verified(drafted, accepted, greedy ? SecondsSince(start) : 0.0);
  ++stats_.passes;
  stats_.drafted += drafted;
  stats_.accepted += accepted;
  return std::span<const int32_t>(chosen_);
}

}  // namespace kite
