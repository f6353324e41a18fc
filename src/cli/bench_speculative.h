// `kite bench -m MODEL --spec ngram|draft [--draft M] [-f PROMPT_FILE] [-n 128] [-r 5]`: plain
// greedy decoding against speculative decoding of the same prompt, side by side: one untimed
// warm-up of each, then -r repetitions of each in alternating order (plain first on even
// repetitions, speculative first on odd ones, so a machine that slows down or speeds up during
// the run weighs on both alike), each from an empty cache. Reports the median decode tokens/s of
// each (the tokens after the first over the wall time after the prompt: sampling, drafting and
// rollbacks count in both modes alike), their ratio, the acceptance rate, the tokens kept per target run, and whether the
// outputs were the same tokens (greedy: they must be).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "base/status.h"
#include "cli/setting_flags.h"
#include "tensor/dtype.h"

namespace kite::cli {

// What the rest of `kite bench` parsed that the speculative comparison uses.
struct SpeculativeBenchRun {
  std::string model;
  int32_t threads = 0;
  std::string backend;
  int32_t reps = 5;
  int32_t n_gen = 128;
  int32_t ctx = 0;
  DType kv_type = DType::kF16;
  bool amx = true;  // false: --no-amx
  bool json = false;
};

class SpeculativeBenchFlags {
 public:
  // Adds --spec, --draft, --draft-max, --draft-min, --ngram-min, --ngram-max (the settings
  // table's) and -f/--file to `bench`.
  explicit SpeculativeBenchFlags(CLI::App* bench);

  // Whether --spec or --draft was given: the bench is then the speculative comparison.
  bool given() const;

  Status Run(const SpeculativeBenchRun& run) const;

 private:
  SettingFlags settings_;
  std::string prompt_file_;
};

}  // namespace kite::cli
