// How long loading a model takes and how much memory it holds: `model_load_bench PATH [PATH...]`
// loads each (an .onnx export, an HF folder or a GGUF, through models/load_model.h: for ONNX the
// whole import, folding, matching and the weights' transposition) and prints one JSON line with
// the wall time, the process's peak resident set (getrusage), its resident set after the load,
// and the weights' bytes. Run one path per process for a clean peak.
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>

#include "models/load_model.h"

namespace {

// VmRSS of this process now, in bytes.
long long ResidentBytes() {
  std::ifstream status("/proc/self/status");
  std::string key;
  long long kb = 0;
  while (status >> key) {
    if (key == "VmRSS:") {
      status >> kb;
      return kb * 1024;
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: model_load_bench MODEL [MODEL...]\n");
    return 2;
  }
  for (int i = 1; i < argc; ++i) {
    const auto start = std::chrono::steady_clock::now();
    auto model = kite::LoadModel(argv[i]);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!model) {
      std::fprintf(stderr, "%s\n", model.error().message.c_str());
      return 1;
    }
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    std::printf(
        "{\"model\": \"%s\", \"seconds\": %.3f, \"peak_rss_bytes\": %lld, \"rss_bytes\": %lld, "
        "\"weight_bytes\": %llu}\n",
        argv[i], seconds, static_cast<long long>(usage.ru_maxrss) * 1024, ResidentBytes(),
        static_cast<unsigned long long>((*model)->weights().Bytes()));
  }
  return 0;
}
