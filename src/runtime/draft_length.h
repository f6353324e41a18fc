// How many tokens to draft next: the adaptive k of speculative decoding. A verification pass of
// k + 1 tokens costs more than a plain decode step: a little where decoding is memory-bound (the
// weights are read once for all rows), up to k + 1 times where it is compute-bound (a small
// model whose weights sit in cache, or cores busy with other work). So k follows both what the
// drafts are worth and what the passes cost, measured as the generation runs:
//   - the acceptance rate a (decayed counts of kept and rejected draft tokens) gives the tokens a
//     pass of k drafts is expected to yield, (1 - a^(k+1)) / (1 - a); the measured seconds of
//     passes of each length and of plain steps give its price; k is the length with the most
//     tokens per second, at most the cap below;
//   - the cap: it starts at kFirstCap; a pass whose drafts were all kept doubles it (up to
//     draft_max), one that kept some sets it to one more than it kept, one that kept none halves
//     it (not below draft_min);
//   - drafting pauses for a number of plain steps that doubles with each pause (kFirstPause up
//     to kLongestPause) after kMissesBeforePause passes in a row that kept nothing, or when no
//     length is expected to beat a plain step; a pass that keeps a token resets the pauses;
//   - drafting keeps an account: the seconds its passes and its drafter's catching up took
//     beyond the plain steps their tokens would have taken (less what passes saved), against
//     the seconds of the whole generation (a length's first pass at the length's price, as
//     below). A pause lasts at least until a probe after it that keeps nothing would leave that
//     cost under kBudget of the time; the probe costs the catching up on the pause's tokens
//     (seconds a token, as measured so far) and a missed pass of the shortest length. Where
//     catching up costs more a token than kBudget of a step, no pause is long enough: drafting
//     stops unless what it saved earlier pays for the probe. The doubling alone bounds the
//     passes, not what they cost: a draft model half as dear as its target lost 7-20% of the
//     speed that way, most of it in reading a pause's tokens before a probe.
// The first step is a plain one, to time it; until then (and when runs are given 0 seconds:
// sampled decoding, runtime/speculator.h) the cap alone decides; lengths not yet timed are priced
// as the longest timed one below them (optimistic, so that they get tried). A length's first pass
// is not timed: it compiles that length's graph (Engine::LeaseGraph), a one-off that cost 15-20 ms
// against a 20 ms pass on a 0.45 B model and priced that length out for the rest of the text.
// So a drafter that is always wrong costs a bounded number of extra passes (MaxWastedPasses) and
// one that is right runs at the length that pays most.
#pragma once

#include <cstdint>
#include <vector>

namespace kite {

struct DraftLimits {
  int32_t draft_max = 8;  // most tokens drafted for one pass
  int32_t draft_min = 1;  // a draft shorter than this is not verified (a plain step instead)
};

class DraftLength {
 public:
  static constexpr int32_t kMissesBeforePause = 3;
  static constexpr int32_t kFirstPause = 8;
  static constexpr int32_t kLongestPause = 256;
  // The cap to start from: short, so that finding out what passes cost and whether the drafts
  // are any good is cheap (a pass of 9 tokens costs 4.6 decode steps on the 6 M-parameter demo
  // model); drafts that are kept double it quickly.
  static constexpr int32_t kFirstCap = 2;
  // The share of the time drafting may cost when it does not pay: with one probe's overshoot,
  // within the 5% a user should lose at worst.
  static constexpr double kBudget = 0.03;
  // The pause that stands for "no more drafting" (about the longest generation's length).
  static constexpr int32_t kNeverSteps = 1 << 20;

  explicit DraftLength(DraftLimits limits);

  // Tokens to ask the drafter for now; 0: take a plain step.
  int32_t Next() const;
  // A plain step was taken (no draft, or one too short to verify); it took `seconds`.
  void PlainStep(double seconds);
  // A pass verified `drafted` tokens and kept `accepted` of them; drafting and verifying took
  // `seconds`.
  void Verified(int32_t drafted, int32_t accepted, double seconds);
  // The drafter caught up on the history before a pass (Drafter::Follow), feeding `tokens` in
  // `seconds`: a cost of drafting that no pass's price includes.
  void CaughtUp(int32_t tokens, double seconds);

  // The most passes that keep nothing in `steps` tokens of output when every draft is wrong:
  // the bound the back-off test holds the speculator to.
  static int64_t MaxWastedPasses(int64_t steps);

 private:
  // Expected tokens a pass of k drafts yields at the measured acceptance rate.
  double Yield(int32_t k) const;
  // Seconds of a run of `fed` tokens: measured, or the longest measured shorter run's.
  double Cost(int32_t fed) const;
  // The length in [draft_min, cap_] with the most tokens per second; 0 when a plain step is
  // expected to be faster; cap_ while no plain step has been timed.
  int32_t BestLength() const;
  void Pause();

  DraftLimits limits_;
  int32_t cap_;             // the longest draft to ask for now
  int32_t misses_ = 0;      // passes in a row that kept nothing
  int32_t pause_left_ = 1;  // plain steps before drafting again: first, one to time
  int32_t next_pause_ = kFirstPause;
  double kept_ = 1.0, rejected_ = 1.0;  // decayed counts of draft tokens: a = kept / (sum)
  std::vector<double> cost_;            // [draft_max + 2]: seconds of a run of T tokens; 0: untimed
  std::vector<bool> ran_;               // [draft_max + 2]: a pass of T tokens has run (compiled)
  double overspent_ = 0.0;  // seconds drafting cost beyond plain steps (negative: saved)
  double elapsed_ = 0.0;    // seconds of every step, pass and catching up so far
  double caught_up_seconds_ = 0.0;  // in Drafter::Follow, over
  int64_t caught_up_tokens_ = 0;    // the tokens it fed
};

}  // namespace kite
