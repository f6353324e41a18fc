// Progress of a long evaluation (kite eval) on stderr, with an estimate of the time left. On a
// terminal the line is rewritten in place; into a file or pipe (a script's log) only the last
// step is written, on a line of its own.
#pragma once

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace kite::cli {

class EtaProgress {
 public:
  explicit EtaProgress(std::string what)
      : what_(std::move(what)), tty_(::isatty(STDERR_FILENO) == 1), start_(Clock::now()) {}

  // "\r<what> 3/32  <figure>  ETA 1m05s"; `figure` is the running result ("ppl 12.3456").
  void Update(int64_t done, int64_t total, const std::string& figure) const {
    if (!tty_ && done != total) return;
    const double elapsed = std::chrono::duration<double>(Clock::now() - start_).count();
    const double left = done > 0 ? elapsed / static_cast<double>(done) * static_cast<double>(total - done) : 0.0;
    const auto seconds = static_cast<long long>(done == total ? elapsed : left);
    std::fprintf(stderr, "%s%s %lld/%lld  %s  %s %lldm%02llds%s", tty_ ? "\r" : "", what_.c_str(),
                 static_cast<long long>(done), static_cast<long long>(total), figure.c_str(),
                 done == total ? "took" : "ETA", seconds / 60, seconds % 60,
                 done == total ? "\n" : "   ");
  }

 private:
  using Clock = std::chrono::steady_clock;
  std::string what_;
  bool tty_;
  Clock::time_point start_;
};

}  // namespace kite::cli
