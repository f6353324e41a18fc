// The one table of run settings: every engine, generation and sampler setting, defined once with
// its type, allowed range, default, meaning, command-line spellings and run.json key. The command
// line (cli/setting_flags.h), run.json and genie_config.json (runtime/run_config.h) — and a future
// server or C API — parse and validate through it, so they accept the same values and refuse the
// others with the same words, naming where the value came from, the value and what is allowed:
//   --top-p 2: must be in [0, 1]
//   run.json: "sampler.top_p" = 2: must be in [0, 1]
// Ranges follow llama.cpp's where it has the setting. NaN and infinities are refused everywhere.
// No CLI11 here: the flag binding lives in cli/.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "base/status.h"
#include "base/thread_pool.h"  // UsableCpuCount, which the thread clamp uses
#include "runtime/draft_length.h"
#include "runtime/engine.h"
#include "runtime/sampler.h"
#include "tensor/dtype.h"

namespace kite {

// Speculative decoding (runtime/speculative_setup.h): how drafts are made and how long they are.
struct SpeculativeSettings {
  // "none", "ngram" (prompt lookup) or "draft" (a draft model). "none" with a draft model
  // given means "draft", as llama.cpp's --model-draft turns drafting on.
  std::string mode = "none";
  std::string draft_model;  // a Hugging Face folder or a .gguf file of the same tokenizer
  DraftLimits limits;
  int32_t ngram_min = 2;  // shortest context suffix looked up
  int32_t ngram_max = 4;  // longest, tried first
};

// Everything one `kite run` / `kite chat` needs, with the defaults the table shows.
struct RunSettings {
  std::string model;  // a Hugging Face folder or a .gguf file
  EngineOptions engine;
  SamplerConfig sampler;
  bool random_seed = false;  // seed -1: DrawSeedIfRandom picks one
  int32_t n_predict = 128;   // -1: until an EOS token or the context is full
  bool ignore_eos = false;   // EOS tokens do not end generation
  std::vector<std::string> stop;
  std::string chat_template;  // a built-in template's name; "" = the model's own
  SpeculativeSettings speculative;
};

using SettingValue = std::variant<bool, int64_t, double, std::string, std::vector<std::string>>;

enum class SettingType {
  kBool,
  kInt,         // whole number in [int_min, int_max]
  kFloat,       // finite number in [min, max] (min excluded when min_open)
  kString,      // any text
  kChoice,      // one of choices()
  kStringList,  // non-empty texts, one per use of the flag
};

struct Setting {
  std::string key = {};            // run.json: "sampler.top_p" is "top_p" inside "sampler"
  std::vector<std::string> flags = {};  // command-line spellings, the canonical one first
  SettingType type = SettingType::kString;
  std::string help = {};          // the meaning, one line
  std::string default_note = {};  // said after the default when it needs explaining ("all CPUs")
  int64_t int_min = 0, int_max = INT32_MAX;
  double min = 0, max = 0;
  bool min_open = false;
  // kInt: values above the CPUs this process may use are lowered to that count, with a warning.
  bool clamp_to_cpus = false;
  std::vector<std::string> (*choices)() = nullptr;
  // kChoice: a comma-separated list of choices, in order of preference, split as the backend
  // registry splits one (PreferenceNames: "double,cpu").
  bool choice_list = false;
  void (*store)(RunSettings&, const SettingValue&) = nullptr;
  SettingValue (*load)(const RunSettings&) = nullptr;
};

// Every setting, in the order --help lists them.
const std::vector<Setting>& SettingsTable();
const Setting* FindSetting(std::string_view key);


// "in [0, 1]", ">= 0", "> 0", "one of f16, f32", ... (empty when anything goes).
std::string RangeText(const Setting& setting);
// The value as the default column and messages print it.
std::string ValueText(const SettingValue& value);
// The meaning, the range and the default, for --help.
std::string HelpLine(const Setting& setting);

// A value typed on the command line after `flag` ("--top-p"). Errors read "--top-p 2: must be
// in [0, 1]". A warning (a clamped thread count) is appended to *warnings.
Result<SettingValue> ParseSettingText(const Setting& setting, std::string_view flag,
                                      std::string_view text, std::vector<std::string>* warnings);
// A value from a JSON file; `where` names the file and `name` the key as the file spells it.
// Errors read "run.json: \"sampler.top_p\" = 2: must be in [0, 1]".
Result<SettingValue> ParseSettingJson(const Setting& setting, std::string_view where,
                                      std::string_view name, const nlohmann::json& value,
                                      std::vector<std::string>* warnings);

// Applies a run.json object: top-level keys and nested objects ("sampler": {...}) named by the
// table; an unknown key is an error listing the known ones.
Status ApplySettingsJson(const nlohmann::json& root, const std::string& where,
                         RunSettings* settings, std::vector<std::string>* warnings);

// With random_seed set, draws a seed from std::random_device into sampler.seed, clears
// random_seed and returns true (print the seed so the run can be repeated with --seed).
bool DrawSeedIfRandom(RunSettings* settings);

}  // namespace kite
