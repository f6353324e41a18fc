#include "runtime/draft_length.h"

#include <algorithm>

namespace kite {

DraftLength::DraftLength(DraftLimits limits) : limits_(limits), length_(limits.draft_max) {}

int32_t DraftLength::Next() const { return pause_left_ > 0 ? 0 : length_; }

void DraftLength::PlainStep() {
  if (pause_left_ > 0) --pause_left_;
}

void DraftLength::Verified(int32_t drafted, int32_t accepted) {
  if (accepted > 0) {
    misses_ = 0;
    next_pause_ = kFirstPause;
    length_ = accepted == drafted ? std::min(limits_.draft_max, 2 * std::max(length_, drafted))
                                  : std::clamp(accepted + 1, limits_.draft_min, limits_.draft_max);
    return;
  }
  length_ = std::max(limits_.draft_min, length_ / 2);
  if (++misses_ < kMissesBeforePause) return;
  misses_ = 0;
  pause_left_ = next_pause_;
  next_pause_ = std::min(kLongestPause, 2 * next_pause_);
}

int64_t DraftLength::MaxWastedPasses(int64_t steps) {
  // Each pause follows kMissesBeforePause misses; pauses grow 8, 16, ... 256, then stay.
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
