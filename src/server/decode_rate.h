// Tokens per second over a sliding window (the last few seconds), for /status and /metrics:
// counts land in one-second buckets; the rate is their sum over the window's span.
// Not thread-safe: the scheduler guards it with its mutex.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>

namespace kite {

class DecodeRate {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr int kWindowSeconds = 5;

  explicit DecodeRate(Clock::time_point start = Clock::now()) : start_(start) {}

  void Add(int64_t tokens, Clock::time_point now = Clock::now());
  // Tokens per second over the last kWindowSeconds whole seconds (fewer right after start),
  // the current second included.
  double PerSecond(Clock::time_point now = Clock::now()) const;

 private:
  int64_t SecondOf(Clock::time_point time) const;
  // Moves the window forward to `second`, zeroing the buckets it passes.
  void Advance(int64_t second);

  Clock::time_point start_;
  std::array<int64_t, kWindowSeconds + 1> buckets_{};  // by second modulo the size
  int64_t newest_ = 0;                                 // the second buckets_ ends with
};

}  // namespace kite
