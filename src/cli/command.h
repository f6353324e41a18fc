// Each subcommand lives in its own file and registers itself on the CLI11 app.
#pragma once

#include <span>
#include <string>

#include <CLI/CLI.hpp>

#include "base/status.h"

namespace kite::cli {

// Exit codes: 0 ok, 1 runtime error from Kite (a bad file, a run.json value out of range), 2 bad
// command line (an unknown subcommand or flag, a flag value the parser or the settings table
// refuses; main.cpp), 70 a bug in Kite.
int ExitCodeFor(const Error& error);
// Prints "kite: <message>" to stderr and returns the exit code.
int ReportError(const Error& error);

// Each Add*Command adds a subcommand whose callback sets *exit_code.
void AddTokenizeCommand(CLI::App& app, int* exit_code);
void AddDetokenizeCommand(CLI::App& app, int* exit_code);
void AddInspectCommand(CLI::App& app, int* exit_code);
void AddRunCommand(CLI::App& app, int* exit_code);
void AddChatCommand(CLI::App& app, int* exit_code);
void AddEvalCommand(CLI::App& app, int* exit_code);
void AddConvertCommand(CLI::App& app, int* exit_code);
void AddSynthCommand(CLI::App& app, int* exit_code);
void AddBenchCommand(CLI::App& app, int* exit_code);
void AddQuantizeCommand(CLI::App& app, int* exit_code);
void AddCompileCommand(CLI::App& app, int* exit_code);
void AddImatrixCommand(CLI::App& app, int* exit_code);
void AddDoctorCommand(CLI::App& app, int* exit_code);
void AddServeCommand(CLI::App& app, int* exit_code);
void AddProfileCommand(CLI::App& app, int* exit_code);


}  // namespace kite::cli
