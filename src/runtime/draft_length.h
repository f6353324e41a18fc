// How many tokens to draft next: the adaptive k of speculative decoding. A verification pass of
// k + 1 tokens costs more than a plain decode step (a little on a memory-bound machine, up to
// k + 1 times on a compute-bound one), so drafting must stop paying when the drafts miss:
//   - a pass whose drafts were all kept doubles k (up to draft_max): the text is predictable;
//   - a pass that kept some sets k to one more than it kept;
//   - a pass that kept none halves k, and after kMissesBeforePause such passes in a row drafting
//     pauses for a number of plain steps that doubles with each pause (kFirstPause up to
//     kLongestPause) until a pass keeps a token again.
// So a drafter that is always wrong costs a bounded number of extra passes per kLongestPause
// tokens (MaxWastedPasses), and one that is right runs at full length.
#pragma once

#include <cstdint>

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

  explicit DraftLength(DraftLimits limits);

  // Tokens to ask the drafter for now; 0: take a plain step (a pause after misses).
  int32_t Next() const;
  // A plain step was taken (no draft, or one too short to verify).
  void PlainStep();
  // A pass verified `drafted` tokens and kept `accepted` of them.
  void Verified(int32_t drafted, int32_t accepted);

  // The most passes that keep nothing in `steps` tokens of output when every draft is wrong:
  // the bound the back-off test holds the speculator to.
  static int64_t MaxWastedPasses(int64_t steps);

 private:
  DraftLimits limits_;
  int32_t length_;         // k for the next pass
  int32_t misses_ = 0;     // passes in a row that kept nothing
  int32_t pause_left_ = 0; // plain steps before drafting again
  int32_t next_pause_ = kFirstPause;
};

}  // namespace kite
