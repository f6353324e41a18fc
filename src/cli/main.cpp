// `kite`: one binary, one file per subcommand.
#include <cstdio>

#include "cli/command.h"

namespace kite::cli {

int ExitCodeFor(const Error& error) { return error.code == ErrorCode::kInternal ? 70 : 1; }

int ReportError(const Error& error) {
  std::fprintf(stderr, "kite: %s\n", error.message.c_str());
  return ExitCodeFor(error);
}

void ReportWarnings(std::span<const std::string> warnings) {
  for (const std::string& warning : warnings) {
    std::fprintf(stderr, "kite: warning: %s\n", warning.c_str());
  }
}

}  // namespace kite::cli

int main(int argc, char** argv) {
  CLI::App app{"Kite: LLM inference for NPUs and CPUs"};
  app.set_version_flag("--version", "kite 0.1.0");
  app.require_subcommand(1);
  int exit_code = 0;
  kite::cli::AddTokenizeCommand(app, &exit_code);
  kite::cli::AddDetokenizeCommand(app, &exit_code);
  kite::cli::AddInspectCommand(app, &exit_code);
  kite::cli::AddRunCommand(app, &exit_code);
  kite::cli::AddChatCommand(app, &exit_code);
  kite::cli::AddEvalCommand(app, &exit_code);
  kite::cli::AddConvertCommand(app, &exit_code);
  kite::cli::AddSynthCommand(app, &exit_code);
  kite::cli::AddBenchCommand(app, &exit_code);
  CLI11_PARSE(app, argc, argv);
  return exit_code;
}
