// Progress of a long GGUF write (kite convert, kite synth, kite quantize) on stderr.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

#include "export/gguf_stream.h"

namespace kite::cli {

// "\r<what>: 42% (310 of 738 MiB, ETA 12 s)", printed once per whole percent, a newline at the
// end; nothing for writes under `min_total` bytes (convert and synth: 64 MiB, which take well
// under a second; quantizing takes longer per byte). The ETA assumes the rest goes as fast as
// what is done so far, and appears once a second has passed.
inline WriteProgress StderrProgress(std::string what, uint64_t min_total = uint64_t{64} << 20) {
  struct State {
    int last = -1;
    std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  };
  auto state = std::make_shared<State>();
  return [what = std::move(what), state, min_total](uint64_t done, uint64_t total) {
    if (total < min_total) return;
    const int percent = total == 0 ? 100 : static_cast<int>(done * 100 / total);
    if (percent == state->last) return;
    state->last = percent;
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - state->start).count();
    char eta[48] = "";
    if (done > 0 && done < total && elapsed >= 1.0) {
      const double left = elapsed * static_cast<double>(total - done) / static_cast<double>(done);
      std::snprintf(eta, sizeof(eta), ", ETA %.0f s", left);
    }
    std::fprintf(stderr, "\r%s: %3d%% (%llu of %llu MiB%s)%s", what.c_str(), percent,
                 static_cast<unsigned long long>(done >> 20),
                 static_cast<unsigned long long>(total >> 20), eta, done == total ? "\n" : "");
  };
}

}  // namespace kite::cli
