// The small random models of tools/make_arch_references.py (Qwen3, Gemma 2 (twice), Gemma 3,
// Phi-3 with LongRoPE, a Mistral with a short sliding window) with their PyTorch goldens, made once per
// test binary in a temporary folder: the weights are not committed.
#pragma once

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "base/hash.h"
#include "base/mapped_file.h"
#include "cli_runner.h"

namespace kite::testing {

inline constexpr const char* kArchReferenceModels[] = {"qwen3", "gemma2", "gemma3", "phi4-longrope",
                                                       "mistral-window"};

// The folder holding one subfolder per model, or "" with `why` set when the script failed
// (Debian's python3-torch and python3-sentencepiece are needed; `make test` installs them). ctest
// runs every test in a process of its own: the folder is named by a hash of the scripts, made
// once (in a folder of the process's own, renamed into place) and reused by later processes.
inline const std::string& ArchReferenceDir(std::string* why) {
  static std::string dir, error;
  static bool made = false;
  if (!made) {
    made = true;
    uint64_t hash = kFnv1aStart;
    for (const char* script : {"make_arch_references.py", "make_reference_models.py",
                               "llama_reference.py", "gemma_reference.py", "phi3_reference.py"}) {
      auto text = ReadTextFile(SourcePath(std::string("tools/") + script), kConfigFileLimit);
      if (text) hash = Fnv1a(text->data(), text->size(), hash);
    }
    char name[32];
    std::snprintf(name, sizeof name, "%016llx", static_cast<unsigned long long>(hash));
    const std::string final_dir = ::testing::TempDir() + "kite_arch_reference_" + name;
    if (!std::filesystem::exists(final_dir + "/done")) {
      const std::string work = final_dir + ".tmp" + std::to_string(getpid());
      std::filesystem::remove_all(work);
      const auto run =
          RunProgram("/usr/bin/python3", {SourcePath("tools/make_arch_references.py"), "--out", work});
      if (run.exit_code != 0) {
        error = "tools/make_arch_references.py failed (exit " + std::to_string(run.exit_code) +
                "; python3-torch and python3-sentencepiece are needed): " + run.err;
        std::filesystem::remove_all(work);
      } else {
        std::ofstream(work + "/done") << "made by tools/make_arch_references.py\n";
        std::error_code ignored;  // another process may have put its copy in place first
        std::filesystem::rename(work, final_dir, ignored);
        std::filesystem::remove_all(work, ignored);
      }
    }
    if (error.empty()) dir = final_dir;
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
