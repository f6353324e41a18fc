// libFuzzer: arbitrary bytes as an importance-matrix file (llama.cpp's imatrix GGUF or legacy
// .dat) -> ReadImatrix. What it accepts must be usable as importance: finite, non-negative sums.
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "quant/imatrix_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = "/tmp/kite_imatrix_fuzz_" + std::to_string(getpid()) + ".imatrix";
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(data),
                                              static_cast<std::streamsize>(size));
  auto stats = kite::ReadImatrix(path);
  std::remove(path.c_str());
  if (!stats) return 0;
  for (const auto& [name, linear] : stats->linears) {
    for (double v : linear.sum_sq) {
      if (!std::isfinite(v) || v < 0) std::abort();
    }
  }
  return 0;
}
