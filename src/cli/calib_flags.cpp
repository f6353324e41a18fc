#include "cli/calib_flags.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>

#include "base/mapped_file.h"

namespace kite::cli {

std::string DefaultCalibrationFile() {
  return std::string(KITE_DATA_DIR) + "/calib/kjv-genesis.txt";
}

void AddCalibFlags(CLI::App* command, CalibFlags* flags) {
  command->add_option("--calib", flags->file,
                      "Calibration text (default: the bundled King James Genesis, " +
                          DefaultCalibrationFile() + ")");
  command
      ->add_option("--calib-tokens", flags->tokens,
                   "Calibration tokens, run in windows of 512 (default 16384)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
  command->add_flag("--calib-chat", flags->chat,
                    "Instruct models: write the text as conversations in the model's chat "
                    "template (a line asked, the next three answered)");
  command->add_option("--chat-template", flags->chat_template,
                      "With --calib-chat: a built-in template to use instead of the model's");
}

Result<std::vector<std::vector<int32_t>>> CalibrationWindowsFor(const CalibFlags& flags,
                                                                const Tokenizer& tokenizer,
                                                                int32_t context_length) {
  constexpr int32_t kWindow = 512;
  const std::string path = flags.file.empty() ? DefaultCalibrationFile() : flags.file;
  const std::string text = KITE_TRY(ReadTextFile(path, kTextFileLimit));
  return CalibrationWindows(
      tokenizer, text, path,
      {.tokens = flags.tokens,
       .window = context_length > 0 ? std::min(kWindow, context_length) : kWindow,
       .chat = flags.chat,
       .chat_template = flags.chat_template});
}

CalibrationProgress StderrCalibrationProgress(std::string what) {
  struct State {
    std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
    int percent = -1;
  };
  auto state = std::make_shared<State>();
  return [what = std::move(what), state](int64_t done, int64_t total) {
    const int percent = total == 0 ? 100 : static_cast<int>(done * 100 / total);
    if (percent == state->percent) return;
    state->percent = percent;
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - state->start).count();
    const long eta = done == 0 ? 0 : std::lround(elapsed * (total - done) / done);
    std::fprintf(stderr, "\r%s: %3d%% (ETA %ldm%02lds)%s", what.c_str(), percent, eta / 60,
                 eta % 60, done == total ? "\n" : "");
  };
}

}  // namespace kite::cli
