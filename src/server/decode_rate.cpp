#include "server/decode_rate.h"

#include <algorithm>

namespace kite {

int64_t DecodeRate::SecondOf(Clock::time_point time) const {
  return std::chrono::duration_cast<std::chrono::seconds>(time - start_).count();
}

void DecodeRate::Advance(int64_t second) {
  const int64_t size = static_cast<int64_t>(buckets_.size());
  for (int64_t s = std::max(newest_ + 1, second - size + 1); s <= second; ++s) {
    buckets_[s % size] = 0;
  }
  newest_ = std::max(newest_, second);
}

void DecodeRate::Add(int64_t tokens, Clock::time_point now) {
  const int64_t second = SecondOf(now);
  Advance(second);
  buckets_[second % static_cast<int64_t>(buckets_.size())] += tokens;
}

double DecodeRate::PerSecond(Clock::time_point now) const {
  const int64_t second = SecondOf(now);
  const int64_t size = static_cast<int64_t>(buckets_.size());
  int64_t total = 0;
  // The window: the current (partial) second and the kWindowSeconds before it, as far as
  // they have happened and the buckets still hold them.
  for (int64_t s = std::max<int64_t>(0, second - kWindowSeconds); s <= second; ++s) {
    if (s <= newest_ && s > newest_ - size) total += buckets_[s % size];
  }
  const double span = std::chrono::duration<double>(now - start_).count();
  const double seconds = std::clamp(span - (second - std::min<int64_t>(second, kWindowSeconds)),
                                    1e-3, static_cast<double>(kWindowSeconds + 1));
  return total / seconds;
}

}  // namespace kite
