// Wall time since a point of std::chrono::steady_clock, in seconds: what the runtime's timing
// lines and speculative decoding's price of a run are measured with.
#pragma once

#include <chrono>

namespace kite {

inline double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace kite
