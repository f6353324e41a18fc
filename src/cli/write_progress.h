// Progress of a long GGUF write (kite convert, kite synth) on stderr.
#pragma once

#include <cstdio>
#include <memory>
#include <string>

#include "export/gguf_stream.h"

namespace kite::cli {

// "\r<what>: 42% (310 of 738 MiB)", printed once per whole percent, a newline at the end; nothing
// for writes under 64 MiB, which take well under a second.
inline WriteProgress StderrProgress(std::string what) {
  auto last = std::make_shared<int>(-1);
  return [what = std::move(what), last](uint64_t done, uint64_t total) {
    if (total < (uint64_t{64} << 20)) return;
    const int percent = total == 0 ? 100 : static_cast<int>(done * 100 / total);
    if (percent == *last) return;
    *last = percent;
    std::fprintf(stderr, "\r%s: %3d%% (%llu of %llu MiB)%s", what.c_str(), percent,
                 static_cast<unsigned long long>(done >> 20),
                 static_cast<unsigned long long>(total >> 20), done == total ? "\n" : "");
  };
}

}  // namespace kite::cli
