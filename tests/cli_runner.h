// Runs the built `kite` binary for end-to-end tests: stdin from a string, stdout/stderr captured.
#pragma once

#include <string>
#include <vector>

namespace kite::testing {

struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// args are passed to KITE_BINARY as they are (no shell); `input` is written to its stdin.
CommandResult RunKite(const std::vector<std::string>& args, const std::string& input = "");

// The same for any program, looked up on PATH when its name has no slash (an oracle like node).
CommandResult RunProgram(const std::string& program, const std::vector<std::string>& args,
                         const std::string& input = "");

// In a forked child whose standard streams are set up: replaces it with `program` (looked up on
// PATH when its name has no slash) and `args`; exits 127 if that fails.
[[noreturn]] void ExecProgram(const std::string& program, const std::vector<std::string>& args);

std::string SourcePath(const std::string& relative);  // KITE_SOURCE_DIR + "/" + relative

}  // namespace kite::testing
