// Speculative decoding's step: the token just chosen and a draft of what follows are fed to the
// target model in one batched pass that returns every position's logits; the longest prefix of
// the draft the acceptance rule keeps (runtime/speculative_accept.h: greedy, argmax equality, so
// the output is token for token plain greedy decoding's; sampled, min(1, p/q), so it is a sample
// of the same distribution) stays in the session, the rest is rolled back (Session::Truncate),
// and the pass also chooses the token after the kept ones, so each pass yields 1 to k + 1
// tokens for about the price of one decode step where decoding is memory-bound (the batched
// kernels read each weight once for all k + 1 rows). How many tokens to draft adapts to how
// many were kept and, for greedy decoding, on what the passes cost (runtime/draft_length.h).
// Sampled decoding gives DraftLength no times: its draws depend on which passes happen, so for a
// seed to give the same text on every run the lengths must not depend on the machine's load.
// Session::Generate drives it when GenerateOptions::drafter is set.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "base/status.h"
#include "runtime/draft_length.h"
#include "runtime/drafter.h"
#include "runtime/sampler.h"
#include "runtime/speculative_accept.h"

namespace kite {

class Session;

struct SpeculativeStats {
  int64_t passes = 0;       // verification passes (a draft was fed with the token before it)
  int64_t plain_steps = 0;  // decode steps without a draft
  int64_t drafted = 0;      // draft tokens verified
  int64_t accepted = 0;     // of which kept
  double plain_seconds = 0.0;  // spent in the plain steps (what a token costs without drafts)
  // accepted / drafted, 0 when nothing was drafted.
  double AcceptanceRate() const {
    return drafted > 0 ? static_cast<double>(accepted) / static_cast<double>(drafted) : 0.0;
  }
  // Tokens kept per run of the target model (each pass keeps 1 + its accepted tokens, a plain
  // step 1): the speed-up where a pass costs what a decode step does.
  double TokensPerRun() const {
    const int64_t runs = passes + plain_steps;
    return runs > 0 ? static_cast<double>(runs + accepted) / static_cast<double>(runs) : 0.0;
  }
};

class Speculator {
 public:
  // `drafter` must outlive the speculator; `n_tokens` is the tokenizer's vocabulary (the ids
  // the sampler chooses from).
  Speculator(Drafter& drafter, DraftLimits limits, int32_t n_tokens);

  // `id` is the token just chosen after session's history, not fed yet. Feeds it, with a draft
  // when the drafter has one and DraftLength asks for one, keeps what the rule accepts and
  // chooses the next token with `sampler`. Returns the tokens chosen: the kept draft tokens
  // (now in the history after `id`) and then one more, not fed. `room` (>= 1) is the most
  // tokens it may feed: the context left and the tokens still wanted.
  Result<std::span<const int32_t>> Advance(Session& session, Sampler& sampler, int32_t id,
                                           int32_t room);

  const SpeculativeStats& stats() const { return stats_; }

 private:
  Drafter& drafter_;
  DraftLimits limits_;
  int32_t n_tokens_;
  DraftLength length_;
  AcceptanceRule rule_;
  SpeculativeStats stats_;
  std::vector<int32_t> context_;  // scratch: the history and `id`, what the drafter sees
  std::vector<int32_t> fed_;      // scratch: `id` and the draft
  std::vector<int32_t> chosen_;   // what Advance returns
};

}  // namespace kite
