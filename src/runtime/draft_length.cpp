#include "runtime/draft_length.h"

#include <algorithm>
#include <cmath>

namespace kite {

namespace {

// Weight of the past in the running acceptance counts and run times: a few passes of history,
// so that k follows the text as it changes (a quoted passage, then free text).
constexpr double kDecay = 0.8;

// Folds a run's time into the running price; a run that took more than twice the price counts
// as twice it: on a shared machine one step in a few hundred is descheduled for milliseconds,
// and one such step must not make every pass look cheap (or dear) for the rest of the text.
void Update(double& cost, double seconds) {
  cost = cost > 0 ? kDecay * cost + (1 - kDecay) * std::min(seconds, 2 * cost) : seconds;
}

}  // namespace

DraftLength::DraftLength(DraftLimits limits)
    : limits_(limits),
      cap_(std::clamp(kFirstCap, limits.draft_min, limits.draft_max)),
      cost_(limits.draft_max + 2, 0.0),
      ran_(limits.draft_max + 2, false) {}

double DraftLength::Yield(int32_t k) const {
  const double a = std::min(kept_ / (kept_ + rejected_), 0.999);
  return (1.0 - std::pow(a, k + 1)) / (1.0 - a);
}

double DraftLength::Cost(int32_t fed) const {
  for (int32_t t = fed; t >= 1; --t) {
    if (cost_[t] > 0) return cost_[t];
  }
  return 0.0;
}

int32_t DraftLength::BestLength() const {
  if (cost_[1] <= 0) return cap_;
  int32_t best = 0;
  double best_rate = 1.0 / cost_[1];  // a plain step: one token
  for (int32_t k = limits_.draft_min; k <= cap_; ++k) {
    const double rate = Yield(k) / Cost(k + 1);
    if (rate > best_rate) best = k, best_rate = rate;
  }
  return best;
}

int32_t DraftLength::Next() const {
  if (pause_left_ > 0) return 0;
  // After a pause, try again at least at the shortest length: the text may have changed.
  return std::max(BestLength(), limits_.draft_min);
}

void DraftLength::Pause() {
  misses_ = 0;
  pause_left_ = next_pause_;
  next_pause_ = std::min(kLongestPause, 2 * next_pause_);
  const double step = cost_[1];
  if (step <= 0) return;  // nothing timed (sampled decoding): the doubling alone
  // After p plain steps and a probe that keeps nothing the account must hold:
  //   overspent + catch_up·p + miss <= kBudget·(elapsed + step·p), i.e. slack + gain·p >= 0.
  const double catch_up = caught_up_tokens_ > 0 ? caught_up_seconds_ / caught_up_tokens_ : 0.0;
  const double miss = std::max(0.0, Cost(limits_.draft_min + 1) - step);
  const double slack = kBudget * elapsed_ - overspent_ - miss;
  const double gain = kBudget * step - catch_up;
  double steps = pause_left_;
  if (gain > 0) {
    steps = std::max(steps, std::ceil(-slack / gain));
  } else if (slack + gain * steps < 0) {
    steps = kNeverSteps;  // every pause makes the probe dearer than the time it adds allows
  }
  pause_left_ = static_cast<int32_t>(std::min<double>(steps, kNeverSteps));
}

void DraftLength::PlainStep(double seconds) {
  Update(cost_[1], seconds);
  elapsed_ += seconds;
  if (pause_left_ > 0) --pause_left_;
}

void DraftLength::CaughtUp(int32_t tokens, double seconds) {
  overspent_ += seconds;
  elapsed_ += seconds;
  if (tokens > 0 && seconds > 0) {
    caught_up_seconds_ += seconds;
    caught_up_tokens_ += tokens;
  }
}

void DraftLength::Verified(int32_t drafted, int32_t accepted, double seconds) {
  // Before a plain step is timed (or when sampling passes no times) there is nothing to weigh.
  // A length's first pass is charged at its length's price: its graph's compiling is paid once
  // a session, and must not keep drafting paused as if every pass cost it.
  const double charged = ran_[drafted + 1] ? seconds : std::min(seconds, Cost(drafted + 1));
  if (cost_[1] > 0) overspent_ += charged - (accepted + 1) * cost_[1];
  elapsed_ += charged;
  if (ran_[drafted + 1]) Update(cost_[drafted + 1], seconds);
  ran_[drafted + 1] = true;
  kept_ = kDecay * kept_ + accepted;
  rejected_ = kDecay * rejected_ + (accepted < drafted ? 1 : 0);
  if (accepted > 0) {
    misses_ = 0;
    cap_ = accepted == drafted ? std::min(limits_.draft_max, 2 * std::max(cap_, drafted))
                               : std::clamp(accepted + 1, limits_.draft_min, limits_.draft_max);
  } else {
    cap_ = std::max(limits_.draft_min, cap_ / 2);
    ++misses_;
  }
  if (misses_ >= kMissesBeforePause || BestLength() == 0) {
    Pause();
  } else if (accepted > 0) {
    next_pause_ = kFirstPause;  // drafting pays: a later pause starts short again
  }
}

int64_t DraftLength::MaxWastedPasses(int64_t steps) {
  // Each pause follows at most kMissesBeforePause misses; pauses grow 8, 16, ... 256, then stay.
  int64_t wasted = 0;
  int64_t pause = kFirstPause;
  while (steps > 0) {
    wasted += kMissesBeforePause;
    steps -= kMissesBeforePause + pause;
    pause = std::min<int64_t>(kLongestPause, 2 * pause);
  }
  return wasted;
}

}  // namespace kite
