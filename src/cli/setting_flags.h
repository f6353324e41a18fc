// The CLI11 binding of the settings table (runtime/settings.h): one option per setting, its help
// line (meaning, range, default) from the table, its value checked by the table as the command
// line is parsed. A refused value is a CLI::ValidationError carrying the table's message
// ("--top-p 2: must be in [0, 1]"), so it exits 2 like any other bad command line (main.cpp).
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "runtime/settings.h"

namespace kite::cli {

class SettingFlags {
 public:
  // Adds an option to `command` for each setting whose key is in `keys` (every setting when
  // `keys` is empty), spelled as the table says.
  explicit SettingFlags(CLI::App* command, const std::vector<std::string>& keys = {});
  SettingFlags(const SettingFlags&) = delete;  // the options' callbacks point here
  SettingFlags& operator=(const SettingFlags&) = delete;

  // Stores the values given on the command line into *settings (a repeated list flag, such as
  // --stop, replaces the list). Returns the warnings of the parse (a clamped thread count).
  std::vector<std::string> ApplyTo(RunSettings* settings) const;
  // Whether the setting `key` was given on the command line.
  bool Given(std::string_view key) const;

 private:
  std::vector<std::pair<const Setting*, SettingValue>> given_;
  std::vector<std::string> warnings_;
};

// For an option callback: `text` given after `flag`, parsed and checked as the table's setting
// `key` says; a refused value throws CLI::ValidationError with the table's message.
SettingValue ParseFlagValue(std::string_view key, std::string_view flag, const std::string& text,
                            std::vector<std::string>* warnings);

// Prints each warning as "kite: warning: <warning>" on stderr.
void PrintWarnings(std::span<const std::string> warnings);

// llama.cpp flags that have no meaning for Kite (-ngl/--n-gpu-layers N, -fa/--flash-attn [on|off]):
// accepted so that a pasted llama.cpp command line runs, with one note on stderr each.
class NotApplicableFlags {
 public:
  explicit NotApplicableFlags(CLI::App* command);
  void Note() const;  // the notes, for the flags that were given

 private:
  CLI::Option* gpu_layers_;
  CLI::Option* flash_attention_;
  std::string gpu_layers_value_, flash_attention_value_;
};

// CLI11 takes one-letter short flags only: llama.cpp's -ngl and -fa are rewritten to their long
// spellings before parsing (main.cpp).
std::vector<std::string> LongSpellingsOfLlamaCppFlags(int argc, char** argv);

}  // namespace kite::cli
