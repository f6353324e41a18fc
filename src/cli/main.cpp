// `kite`: one binary, one file per subcommand.
#include <cstdio>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/setting_flags.h"
#include "kite/kite.h"

namespace kite::cli {

int ExitCodeFor(const Error& error) { return error.code == ErrorCode::kInternal ? 70 : 1; }

int ReportError(const Error& error) {
  std::fprintf(stderr, "kite: %s\n", error.message.c_str());
  return ExitCodeFor(error);
}

namespace {

constexpr int kBadCommandLine = 2;

std::string SubcommandNames(const CLI::App& app) {
  std::string names;
  for (const CLI::App* command : app.get_subcommands([](const CLI::App*) { return true; })) {
    names += (names.empty() ? "" : ", ") + command->get_name();
  }
  return names;
}

bool IsSubcommand(const CLI::App& app, const std::string& name) {
  return !app.get_subcommands([&](const CLI::App* command) { return command->get_name() == name; })
              .empty();
}

// CLI11's own exit codes (104-114) would tell a script nothing: every bad command line exits 2,
// with the parser's message and where to find the flags.
int Parse(CLI::App& app, int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "%s", app.help().c_str());
    return kBadCommandLine;
  }
  const std::string first = argv[1];
  if (!first.starts_with("-") && !IsSubcommand(app, first)) {
    std::fprintf(stderr, "kite: unknown subcommand '%s' (subcommands: %s; kite --help)\n",
                 first.c_str(), SubcommandNames(app).c_str());
    return kBadCommandLine;
  }
  std::vector<std::string> args = LongSpellingsOfLlamaCppFlags(argc, argv);
  std::vector<char*> pointers;
  for (std::string& arg : args) pointers.push_back(arg.data());
  try {
    app.parse(static_cast<int>(pointers.size()), pointers.data());
  } catch (const CLI::Success& done) {  // --help, --version
    return app.exit(done);
  } catch (const CLI::ParseError& error) {
    const std::vector<CLI::App*> chosen = app.get_subcommands();
    const std::string help = chosen.empty() ? "kite --help" : "kite " + chosen.front()->get_name() + " --help";
    std::fprintf(stderr, "kite: %s (%s)\n", error.what(), help.c_str());
    return kBadCommandLine;
  }
  return 0;
}

}  // namespace

}  // namespace kite::cli

int main(int argc, char** argv) {
  CLI::App app{"Kite: LLM inference for NPUs and CPUs", "kite"};
  app.set_version_flag("--version", std::string("kite ") + KITE_VERSION_STRING);  // kite.h's
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
  kite::cli::AddQuantizeCommand(app, &exit_code);
  kite::cli::AddCompileCommand(app, &exit_code);
  kite::cli::AddBenchCommand(app, &exit_code);
  kite::cli::AddImatrixCommand(app, &exit_code);
  kite::cli::AddDoctorCommand(app, &exit_code);
  kite::cli::AddServeCommand(app, &exit_code);
  kite::cli::AddProfileCommand(app, &exit_code);
  if (const int parse_status = kite::cli::Parse(app, argc, argv); parse_status != 0) return parse_status;
  return exit_code;
}
