// The calibration flags that `kite imatrix` and `kite quantize` share: the text (--calib, the
// bundled public-domain text by default), how many tokens (--calib-tokens) and whether it is
// written as chat conversations (--calib-chat, --chat-template).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "quant/calibrate.h"
#include "tokenizer/tokenizer.h"

namespace kite::cli {

struct CalibFlags {
  std::string file;  // "" : DefaultCalibrationFile()
  int64_t tokens = 16384;
  bool chat = false;
  std::string chat_template;
};

// testdata/calib/kjv-genesis.txt of the source tree (testdata/SOURCES.md says where it is from).
std::string DefaultCalibrationFile();

void AddCalibFlags(CLI::App* command, CalibFlags* flags);

// The calibration windows (quant/calibrate.h) the flags ask for: of 512 tokens, or of the
// model's trained context when shorter (`context_length`; 0: unknown).
Result<std::vector<std::vector<int32_t>>> CalibrationWindowsFor(const CalibFlags& flags,
                                                                const Tokenizer& tokenizer,
                                                                int32_t context_length);

// "\r<what>: 42% (ETA 1m05s)" on stderr, once per whole percent, a newline at the end.
CalibrationProgress StderrCalibrationProgress(std::string what);

}  // namespace kite::cli
