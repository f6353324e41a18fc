#include "runtime/settings.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>

#include "backends/npusim/support/chip_features.h"
#include "backends/registry.h"
#include "base/json_util.h"
#include "chat/chat_template.h"
#include "graph/kv_cache.h"

namespace kite {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

std::vector<std::string> KvTypeNames() {
  std::vector<std::string> names;
  for (DType dtype : KvCacheTypes()) names.emplace_back(DTypeName(dtype));
  return names;
}

// The chip files' names; none when the folder cannot be read (the chip check then says why).
std::vector<std::string> ChipNames() {
  auto names = ListChips(DefaultChipsDir());
  return names ? std::move(*names) : std::vector<std::string>{};
}

float AsFloat(const SettingValue& value) { return static_cast<float>(std::get<double>(value)); }
int32_t AsInt(const SettingValue& value) { return static_cast<int32_t>(std::get<int64_t>(value)); }

std::vector<std::string> SpeculativeModes() { return {"none", "ngram", "draft"}; }

std::vector<Setting> BuildTable() {
  using V = SettingValue;
  using S = RunSettings;
  return {
      {.key = "model", .flags = {"-m", "--model"}, .type = SettingType::kString,
       .help = "A Hugging Face model folder or a .gguf file",
       .store = [](S& s, const V& v) { s.model = std::get<std::string>(v); },
       .load = [](const S& s) -> V { return s.model; }},
      {.key = "context", .flags = {"--ctx", "-c", "--ctx-size"}, .type = SettingType::kInt,
       .help = "Context length in tokens", .default_note = "the model's, at most 4096",
       .store = [](S& s, const V& v) { s.engine.context_length = AsInt(v); },
       .load = [](const S& s) -> V { return int64_t{s.engine.context_length}; }},
      {.key = "n_predict", .flags = {"-n", "--n-predict"}, .type = SettingType::kInt,
       .help = "Most tokens to generate; -1: until EOS or the context is full", .int_min = -1,
       .store = [](S& s, const V& v) { s.n_predict = AsInt(v); },
       .load = [](const S& s) -> V { return int64_t{s.n_predict}; }},
      {.key = "stop", .flags = {"--stop", "-r", "--reverse-prompt"},
       .type = SettingType::kStringList,
       .help = "Stop before this text (repeatable; not printed)",
       .store = [](S& s, const V& v) { s.stop = std::get<std::vector<std::string>>(v); },
       .load = [](const S& s) -> V { return s.stop; }},
      {.key = "ignore_eos", .flags = {"--ignore-eos"}, .type = SettingType::kBool,
       .help = "Keep generating past the model's EOS tokens",
       .store = [](S& s, const V& v) { s.ignore_eos = std::get<bool>(v); },
       .load = [](const S& s) -> V { return s.ignore_eos; }},
      {.key = "chat_template", .flags = {"--chat-template"}, .type = SettingType::kChoice,
       .help = "A built-in chat template to use instead of the model's",
       .default_note = "the model's own", .choices = BuiltinChatTemplateNames,
       .store = [](S& s, const V& v) { s.chat_template = std::get<std::string>(v); },
       .load = [](const S& s) -> V { return s.chat_template; }},
      {.key = "sampler.temp", .flags = {"--temp"}, .type = SettingType::kFloat,
       .help = "Temperature; 0 is greedy", .max = kInf,
       .store = [](S& s, const V& v) { s.sampler.temperature = AsFloat(v); },
       .load = [](const S& s) -> V { return double{s.sampler.temperature}; }},
      {.key = "sampler.top_k", .flags = {"--top-k"}, .type = SettingType::kInt,
       .help = "Keep the K most likely tokens; 0 keeps all",
       .store = [](S& s, const V& v) { s.sampler.top_k = AsInt(v); },
       .load = [](const S& s) -> V { return int64_t{s.sampler.top_k}; }},
      {.key = "sampler.top_p", .flags = {"--top-p"}, .type = SettingType::kFloat,
       .help = "Nucleus: keep the smallest set of tokens reaching P; 1 keeps all", .max = 1,
       .store = [](S& s, const V& v) { s.sampler.top_p = AsFloat(v); },
       .load = [](const S& s) -> V { return double{s.sampler.top_p}; }},
      {.key = "sampler.min_p", .flags = {"--min-p"}, .type = SettingType::kFloat,
       .help = "Drop tokens below P x the best one's probability; 0 keeps all", .max = 1,
       .store = [](S& s, const V& v) { s.sampler.min_p = AsFloat(v); },
       .load = [](const S& s) -> V { return double{s.sampler.min_p}; }},
      {.key = "sampler.repeat_penalty", .flags = {"--repeat-penalty"}, .type = SettingType::kFloat,
       .help = "Repetition penalty; 1 is off", .max = kInf, .min_open = true,
       .store = [](S& s, const V& v) { s.sampler.repeat_penalty = AsFloat(v); },
       .load = [](const S& s) -> V { return double{s.sampler.repeat_penalty}; }},
      {.key = "sampler.repeat_last_n", .flags = {"--repeat-last-n"}, .type = SettingType::kInt,
       .help = "Tokens the penalties look back over; 0 none, -1 all", .int_min = -1,
       .store = [](S& s, const V& v) { s.sampler.penalty_last_n = AsInt(v); },
       .load = [](const S& s) -> V { return int64_t{s.sampler.penalty_last_n}; }},
      {.key = "sampler.presence_penalty", .flags = {"--presence-penalty"},
       .type = SettingType::kFloat, .help = "Presence penalty; 0 is off", .min = -kInf,
       .max = kInf,
       .store = [](S& s, const V& v) { s.sampler.presence_penalty = AsFloat(v); },
       .load = [](const S& s) -> V { return double{s.sampler.presence_penalty}; }},
      {.key = "sampler.frequency_penalty", .flags = {"--frequency-penalty"},
       .type = SettingType::kFloat, .help = "Frequency penalty; 0 is off", .min = -kInf,
       .max = kInf,
       .store = [](S& s, const V& v) { s.sampler.frequency_penalty = AsFloat(v); },
       .load = [](const S& s) -> V { return double{s.sampler.frequency_penalty}; }},
      {.key = "sampler.seed", .flags = {"-s", "--seed"}, .type = SettingType::kInt,
       .help = "Random seed: the same seed gives the same output; -1 picks one and prints it",
       .int_min = -1, .int_max = INT64_MAX,
       .store =
           [](S& s, const V& v) {
             const int64_t seed = std::get<int64_t>(v);
             s.random_seed = seed < 0;
             s.sampler.seed = seed < 0 ? 0 : static_cast<uint64_t>(seed);
           },
       .load = [](const S& s) -> V {
         return s.random_seed ? int64_t{-1} : static_cast<int64_t>(s.sampler.seed);
       }},
      {.key = "backend", .flags = {"--backend"}, .type = SettingType::kChoice,
       .help = "Backends to run on, in order of preference (each node goes to the first that "
               "runs it; ref, which runs every op, comes last)",
       .choices = AvailableBackends, .choice_list = true,
       .store = [](S& s, const V& v) { s.engine.backend = std::get<std::string>(v); },
       .load = [](const S& s) -> V { return s.engine.backend; }},
      {.key = "chip", .flags = {"--chip"}, .type = SettingType::kChoice,
       .help = "The chip (chips/NAME.json) a simulating backend (npusim) targets; a model "
               "kite compile wrote for another chip is refused",
       .default_note = "a compiled model's chip, else the backend's", .choices = ChipNames,
       .store = [](S& s, const V& v) { s.engine.chip = std::get<std::string>(v); },
       .load = [](const S& s) -> V { return s.engine.chip; }},
      {.key = "threads", .flags = {"-t", "--threads"}, .type = SettingType::kInt,
       .help = "Threads of the cpu backend; more than the CPUs is lowered to their count",
       .default_note = "all CPUs", .clamp_to_cpus = true,
       .store = [](S& s, const V& v) { s.engine.threads = AsInt(v); },
       .load = [](const S& s) -> V { return int64_t{s.engine.threads}; }},
      {.key = "kv_type", .flags = {"--kv-type"}, .type = SettingType::kChoice,
       .help = "KV cache element type", .choices = KvTypeNames,
       .store =
           [](S& s, const V& v) {
             // The value was checked against KvTypeNames(), so it parses.
             s.engine.kv_dtype = *ParseKvCacheType(std::get<std::string>(v));
           },
       .load = [](const S& s) -> V { return std::string(DTypeName(s.engine.kv_dtype)); }},
      {.key = "prefill_chunk", .flags = {"--prefill-chunk"}, .type = SettingType::kInt,
       .help = "Prompt tokens computed per step", .int_min = 1,
       .store = [](S& s, const V& v) { s.engine.prefill_chunk = AsInt(v); },
       .load = [](const S& s) -> V { return int64_t{s.engine.prefill_chunk}; }},
      {.key = "parallel", .flags = {"--parallel"}, .type = SettingType::kInt,
       .help = "Sessions that can each fill the whole context at once (the KV cache holds this "
               "many contexts)",
       .int_min = 1,
       .store = [](S& s, const V& v) { s.engine.parallel = AsInt(v); },
       .load = [](const S& s) -> V { return int64_t{s.engine.parallel}; }},
      {.key = "check_tensors", .flags = {"--check-tensors"}, .type = SettingType::kBool,
       .help = "Scan every weight for NaN and infinity while loading",
       .store = [](S& s, const V& v) { s.engine.check_tensors = std::get<bool>(v); },
       .load = [](const S& s) -> V { return s.engine.check_tensors; }},
      {.key = "float_activations", .flags = {"--float-activations"}, .type = SettingType::kBool,
       .help = "Keep a quantized model's activations float (ignore its static activation "
               "encodings)",
       .store = [](S& s, const V& v) { s.engine.quantized_activations = !std::get<bool>(v); },
       .load = [](const S& s) -> V { return !s.engine.quantized_activations; }},
      {.key = "no_amx", .flags = {"--no-amx"}, .type = SettingType::kBool,
       .help = "Keep prefills off the CPU's AMX tiles (Intel Xeons since Sapphire Rapids): "
               "integer weights' rows then have the bits decode steps give; prefills of integer, "
               "BF16 and F16 weights run at 0.2-0.6x the speed, and attention over an f16 "
               "cache on f32 FMAs",
       .store = [](S& s, const V& v) { s.engine.amx = !std::get<bool>(v); },
       .load = [](const S& s) -> V { return !s.engine.amx; }},
      {.key = "speculative.mode", .flags = {"--spec"}, .type = SettingType::kChoice,
       .help = "Speculative decoding: none; ngram drafts from the context so far (prompt "
               "lookup); draft drafts with --draft MODEL. Greedy output is unchanged, sampled "
               "output keeps its distribution",
       .default_note = "draft when --draft is given", .choices = SpeculativeModes,
       .store = [](S& s, const V& v) { s.speculative.mode = std::get<std::string>(v); },
       .load = [](const S& s) -> V { return s.speculative.mode; }},
      {.key = "speculative.draft_model", .flags = {"--draft", "--model-draft"},
       .type = SettingType::kString,
       .help = "A smaller model with the same tokenizer that drafts tokens (a folder or .gguf)",
       .store = [](S& s, const V& v) { s.speculative.draft_model = std::get<std::string>(v); },
       .load = [](const S& s) -> V { return s.speculative.draft_model; }},
      {.key = "speculative.draft_max", .flags = {"--draft-max"}, .type = SettingType::kInt,
       .help = "Most tokens drafted for one verification pass (fewer after rejections)",
       .int_min = 1, .int_max = 64,
       .store =
           [](S& s, const V& v) {
             s.speculative.limits.draft_max = AsInt(v);
             s.engine.verify_tokens = AsInt(v) + 1;  // keep every pass's graph compiled
           },
       .load = [](const S& s) -> V { return int64_t{s.speculative.limits.draft_max}; }},
      {.key = "speculative.draft_min", .flags = {"--draft-min"}, .type = SettingType::kInt,
       .help = "Fewest drafted tokens worth a verification pass; shorter drafts are dropped",
       .int_min = 1, .int_max = 64,
       .store = [](S& s, const V& v) { s.speculative.limits.draft_min = AsInt(v); },
       .load = [](const S& s) -> V { return int64_t{s.speculative.limits.draft_min}; }},
      {.key = "speculative.ngram_min", .flags = {"--ngram-min"}, .type = SettingType::kInt,
       .help = "--spec ngram: shortest run of last tokens looked up in the context",
       .int_min = 1, .int_max = 16,
       .store = [](S& s, const V& v) { s.speculative.ngram_min = AsInt(v); },
       .load = [](const S& s) -> V { return int64_t{s.speculative.ngram_min}; }},
      {.key = "speculative.ngram_max", .flags = {"--ngram-max"}, .type = SettingType::kInt,
       .help = "--spec ngram: longest run of last tokens looked up (tried first)",
       .int_min = 1, .int_max = 16,
       .store = [](S& s, const V& v) { s.speculative.ngram_max = AsInt(v); },
       .load = [](const S& s) -> V { return int64_t{s.speculative.ngram_max}; }},
  };
}

std::string FormatNumber(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g", value);
  return text;
}

std::string Join(const std::vector<std::string>& items) {
  std::string joined;
  for (const std::string& item : items) joined += (joined.empty() ? "" : ", ") + item;
  return joined;
}

std::unexpected<Error> Refuse(std::string_view subject, const std::string& why) {
  return InvalidInput(std::string(subject) + ": " + why);
}

// The checks every source shares: range, finiteness, choices; the thread clamp.
Result<SettingValue> Check(const Setting& setting, std::string_view subject, SettingValue value,
                           std::vector<std::string>* warnings) {
  const std::string range = RangeText(setting);
  switch (setting.type) {
    case SettingType::kInt: {
      const int64_t number = std::get<int64_t>(value);
      if (number < setting.int_min) return Refuse(subject, "must be " + range);
      if (number > setting.int_max) return Refuse(subject, "must be <= " + std::to_string(setting.int_max));
      if (setting.clamp_to_cpus && number > UsableCpuCount()) {
        const int32_t cpus = UsableCpuCount();
        warnings->push_back(std::string(subject) + ": more than the " + std::to_string(cpus) +
                            " CPUs this process may use; using " + std::to_string(cpus));
        value = int64_t{cpus};
      }
      break;
    }
    case SettingType::kFloat: {
      const double number = std::get<double>(value);
      // Stored as float: a double beyond float's range would become an infinity.
      const bool finite =
          std::isfinite(number) && std::fabs(number) <= std::numeric_limits<float>::max();
      if (!finite) {
        return Refuse(subject, "must be a finite number" + (range.empty() ? "" : " " + range));
      }
      const bool below = setting.min_open ? number <= setting.min : number < setting.min;
      if (below || number > setting.max) return Refuse(subject, "must be " + range);
      break;
    }
    case SettingType::kChoice: {
      const std::vector<std::string> choices = setting.choices();
      const std::string& text = std::get<std::string>(value);
      const std::vector<std::string_view> picked =
          setting.choice_list ? PreferenceNames(text) : std::vector<std::string_view>{text};
      for (size_t i = 0; i < picked.size(); ++i) {
        if (std::find(choices.begin(), choices.end(), picked[i]) == choices.end()) {
          return Refuse(subject, "must be " + range);
        }
        if (std::find(picked.begin(), picked.begin() + i, picked[i]) != picked.begin() + i) {
          return Refuse(subject, "names " + std::string(picked[i]) + " twice");
        }
      }
      break;
    }
    case SettingType::kStringList:
      for (const std::string& text : std::get<std::vector<std::string>>(value)) {
        if (text.empty()) return Refuse(subject, "must not be empty");
      }
      break;
    case SettingType::kBool:
    case SettingType::kString:
      break;
  }
  return value;
}

const char* Expected(SettingType type) {
  switch (type) {
    case SettingType::kBool: return "expected true or false";
    case SettingType::kInt: return "expected an integer";
    case SettingType::kFloat: return "expected a number";
    case SettingType::kString:
    case SettingType::kChoice: return "expected a string";
    case SettingType::kStringList: return "expected an array of strings";
  }
  return "";
}

}  // namespace

const std::vector<Setting>& SettingsTable() {
  static const std::vector<Setting> table = BuildTable();
  return table;
}

const Setting* FindSetting(std::string_view key) {
  for (const Setting& setting : SettingsTable()) {
    if (setting.key == key) return &setting;
  }
  return nullptr;
}

std::string RangeText(const Setting& setting) {
  switch (setting.type) {
    case SettingType::kInt:
      if (setting.int_max == INT32_MAX || setting.int_max == INT64_MAX) {
        return ">= " + std::to_string(setting.int_min);
      }
      return "in [" + std::to_string(setting.int_min) + ", " + std::to_string(setting.int_max) + "]";
    case SettingType::kFloat:
      if (setting.min == -kInf && setting.max == kInf) return "";
      if (setting.max == kInf) return (setting.min_open ? "> " : ">= ") + FormatNumber(setting.min);
      return "in " + std::string(setting.min_open ? "(" : "[") + FormatNumber(setting.min) + ", " +
             FormatNumber(setting.max) + "]";
    case SettingType::kChoice:
      return (setting.choice_list ? "one or more of " : "one of ") + Join(setting.choices()) +
             (setting.choice_list ? ", comma-separated" : "");
    case SettingType::kBool:
    case SettingType::kString:
    case SettingType::kStringList:
      return "";
  }
  return "";
}

std::string ValueText(const SettingValue& value) {
  if (const bool* flag = std::get_if<bool>(&value)) return *flag ? "true" : "false";
  if (const int64_t* number = std::get_if<int64_t>(&value)) return std::to_string(*number);
  if (const double* number = std::get_if<double>(&value)) return FormatNumber(*number);
  if (const std::string* text = std::get_if<std::string>(&value)) return *text;
  return Join(std::get<std::vector<std::string>>(value));
}

std::string HelpLine(const Setting& setting) {
  std::string details = RangeText(setting);
  const std::string shown = ValueText(setting.load(RunSettings{}));
  std::string default_text = setting.default_note.empty() ? shown : setting.default_note;
  if (!setting.default_note.empty() && !shown.empty()) default_text = shown + ": " + setting.default_note;
  if (!default_text.empty()) details += (details.empty() ? "" : "; ") + ("default " + default_text);
  return setting.help + (details.empty() ? "" : " (" + details + ")");
}

Result<SettingValue> ParseSettingText(const Setting& setting, std::string_view flag,
                                      std::string_view text, std::vector<std::string>* warnings) {
  const std::string subject = std::string(flag) + " " + std::string(text);
  const char* end = text.data() + text.size();
  switch (setting.type) {
    case SettingType::kBool:
      if (text == "true" || text == "1") return Check(setting, subject, true, warnings);
      if (text == "false" || text == "0") return Check(setting, subject, false, warnings);
      return Refuse(subject, Expected(setting.type));
    case SettingType::kInt: {
      int64_t number = 0;
      const auto [ptr, error] = std::from_chars(text.data(), end, number);
      if (error == std::errc::result_out_of_range) {
        return Refuse(subject, text.starts_with('-') ? "must be " + RangeText(setting)
                                                     : "must be <= " + std::to_string(setting.int_max));
      }
      if (text.empty() || error != std::errc() || ptr != end) return Refuse(subject, Expected(setting.type));
      return Check(setting, subject, number, warnings);
    }
    case SettingType::kFloat: {
      double number = 0;
      const auto [ptr, error] = std::from_chars(text.data(), end, number);
      if (error == std::errc::result_out_of_range) return Refuse(subject, "must be a finite number");
      if (text.empty() || error != std::errc() || ptr != end) return Refuse(subject, Expected(setting.type));
      return Check(setting, subject, number, warnings);
    }
    case SettingType::kString:
    case SettingType::kChoice:
      return Check(setting, subject, std::string(text), warnings);
    case SettingType::kStringList:
      return Check(setting, subject, std::vector<std::string>{std::string(text)}, warnings);
  }
  return Refuse(subject, "unknown setting type");
}

Result<SettingValue> ParseSettingJson(const Setting& setting, std::string_view where,
                                      std::string_view name, const nlohmann::json& value,
                                      std::vector<std::string>* warnings) {
  const std::string subject = std::string(where) + ": \"" + std::string(name) + "\" = " +
                              value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  switch (setting.type) {
    case SettingType::kBool:
      if (!value.is_boolean()) break;
      return Check(setting, subject, value.get<bool>(), warnings);
    case SettingType::kInt:
      if (const std::optional<int64_t> number = JsonInt(value)) {
        return Check(setting, subject, *number, warnings);
      }
      // A whole number too large for int64 is out of range rather than of the wrong kind.
      if (value.is_number_unsigned()) return Refuse(subject, "must be <= " + std::to_string(setting.int_max));
      break;
    case SettingType::kFloat:
      if (!value.is_number()) break;
      return Check(setting, subject, value.get<double>(), warnings);
    case SettingType::kString:
    case SettingType::kChoice:
      if (!value.is_string()) break;
      return Check(setting, subject, value.get<std::string>(), warnings);
    case SettingType::kStringList: {
      if (!value.is_array()) break;
      std::vector<std::string> texts;
      for (const nlohmann::json& item : value) {
        if (!item.is_string()) return Refuse(subject, Expected(setting.type));
        texts.push_back(item.get<std::string>());
      }
      return Check(setting, subject, texts, warnings);
    }
  }
  return Refuse(subject, std::string(Expected(setting.type)) + ", found " + std::string(JsonKind(value)));
}

namespace {

Status ApplyObject(const nlohmann::json& object, const std::string& where, const std::string& prefix,
                   RunSettings* settings, std::vector<std::string>* warnings) {
  if (!object.is_object()) {
    return InvalidInput(where + ": \"" + prefix + "\": expected an object, found " +
                        std::string(JsonKind(object)));
  }
  const std::string dotted = prefix.empty() ? "" : prefix + ".";
  for (const auto& [name, value] : object.items()) {
    const std::string key = dotted + name;
    if (const Setting* setting = FindSetting(key)) {
      setting->store(*settings, KITE_TRY(ParseSettingJson(*setting, where, key, value, warnings)));
      continue;
    }
    std::vector<std::string> known;  // this object's keys, a nested object's once
    for (const Setting& setting : SettingsTable()) {
      if (!setting.key.starts_with(dotted)) continue;
      const std::string rest = setting.key.substr(dotted.size());
      const std::string first = rest.substr(0, rest.find('.'));
      if (std::find(known.begin(), known.end(), first) == known.end()) known.push_back(first);
    }
    if (std::find(known.begin(), known.end(), name) != known.end()) {
      KITE_RETURN_IF_ERROR(ApplyObject(value, where, key, settings, warnings));
      continue;
    }
    return InvalidInput(where + ": unknown key \"" + name + "\"" +
                        (prefix.empty() ? "" : " in \"" + prefix + "\"") + " (known: " + Join(known) + ")");
  }
  return Ok();
}

}  // namespace

Status ApplySettingsJson(const nlohmann::json& root, const std::string& where, RunSettings* settings,
                         std::vector<std::string>* warnings) {
  if (!root.is_object()) {
    return InvalidInput(where + ": expected an object, found " + std::string(JsonKind(root)));
  }
  return ApplyObject(root, where, "", settings, warnings);
}

bool DrawSeedIfRandom(RunSettings* settings) {
  if (!settings->random_seed) return false;
  // 32 bits, as llama.cpp draws: short enough to retype after --seed.
  settings->sampler.seed = std::random_device{}();
  settings->random_seed = false;
  return true;
}

}  // namespace kite
