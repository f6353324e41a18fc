// The small random models of tools/make_arch_references.py (Qwen3, Gemma 2 (twice), Gemma 3,
// Phi-3 with LongRoPE, a Mistral with a short sliding window) with their PyTorch goldens, made once per
// test binary in a temporary folder: the weights are not committed.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>

#include "cli_runner.h"

namespace kite::testing {

inline constexpr const char* kArchReferenceModels[] = {"qwen3", "gemma2", "gemma3", "phi4-longrope",
                                                       "mistral-window"};

// The folder holding one subfolder per model, or "" with `why` set when the script failed
// (Debian's python3-torch and python3-sentencepiece are needed; `make test` installs them).
inline const std::string& ArchReferenceDir(std::string* why) {
  static std::string dir, error;
  static bool made = false;
  if (!made) {
    made = true;
    const std::string out = ::testing::TempDir() + "kite_arch_reference";
    std::filesystem::remove_all(out);
    const auto run =
        RunProgram("/usr/bin/python3", {SourcePath("tools/make_arch_references.py"), "--out", out});
    if (run.exit_code == 0) {
      dir = out;
    } else {
      error = "tools/make_arch_references.py failed (exit " + std::to_string(run.exit_code) +
              "; python3-torch and python3-sentencepiece are needed): " + run.err;
    }
  }
  *why = error;
  return dir;
}

// `kite convert` of the model's folder into DIR/MODEL.gguf (f32: the goldens are float
// compute), once per binary; "" after a failed conversion (reported as a test failure).
inline std::string ConvertedArchReference(const std::string& dir, const std::string& model) {
  static std::map<std::string, std::string> paths;
  std::string& path = paths[model];
  if (path.empty()) {
    const std::string out = dir + "/" + model + ".gguf";
    const auto convert = RunKite({"convert", dir + "/" + model, "-o", out, "--type", "f32", "-q"});
    EXPECT_EQ(convert.exit_code, 0) << convert.err;
    if (convert.exit_code == 0) path = out;
  }
  return path;
}

}  // namespace kite::testing
