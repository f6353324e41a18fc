#include "cli/setting_flags.h"

#include <algorithm>
#include <cstdio>

namespace kite::cli {

namespace {

std::string Names(const Setting& setting) {
  std::string names;
  for (const std::string& flag : setting.flags) names += (names.empty() ? "" : ",") + flag;
  return names;
}

// The spelling messages use: the first long one.
std::string MessageName(const Setting& setting) {
  for (const std::string& flag : setting.flags) {
    if (flag.starts_with("--")) return flag;
  }
  return setting.flags.front();
}

const char* TypeName(SettingType type) {
  switch (type) {
    case SettingType::kInt: return "INT";
    case SettingType::kFloat: return "FLOAT";
    case SettingType::kChoice: return "NAME";
    case SettingType::kBool:
    case SettingType::kString:
    case SettingType::kStringList: return "TEXT";
  }
  return "TEXT";
}

}  // namespace

SettingFlags::SettingFlags(CLI::App* command, const std::vector<std::string>& keys) {
  for (const Setting& setting : SettingsTable()) {
    if (!keys.empty() && std::find(keys.begin(), keys.end(), setting.key) == keys.end()) continue;
    const Setting* entry = &setting;
    if (setting.type == SettingType::kBool) {
      command->add_flag_callback(Names(setting), [this, entry] { given_.emplace_back(entry, true); },
                                 HelpLine(setting));
      continue;
    }
    const auto parse = [this, entry](const std::string& text) {
      return ParseFlagValue(entry->key, MessageName(*entry), text, &warnings_);
    };
    if (setting.type == SettingType::kStringList) {
      command
          ->add_option_function<std::vector<std::string>>(
              Names(setting),
              [this, entry, parse](const std::vector<std::string>& texts) {
                for (const std::string& text : texts) (void)parse(text);
                given_.emplace_back(entry, texts);
              },
              HelpLine(setting))
          ->allow_extra_args(false)
          ->type_name(TypeName(setting.type));
      continue;
    }
    command
        ->add_option_function<std::string>(
            Names(setting),
            [this, entry, parse](const std::string& text) { given_.emplace_back(entry, parse(text)); },
            HelpLine(setting))
        ->type_name(TypeName(setting.type))
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);  // as llama.cpp: the last one counts
  }
}

bool SettingFlags::Given(std::string_view key) const {
  return std::any_of(given_.begin(), given_.end(),
                     [&](const auto& given) { return given.first->key == key; });
}

std::vector<std::string> SettingFlags::ApplyTo(RunSettings* settings) const {
  for (const auto& [setting, value] : given_) setting->store(*settings, value);
  return warnings_;
}

SettingValue ParseFlagValue(std::string_view key, std::string_view flag, const std::string& text,
                            std::vector<std::string>* warnings) {
  Result<SettingValue> value = ParseSettingText(*FindSetting(key), flag, text, warnings);
  // CLI11 reports errors by exception; the table's message becomes the parse error's.
  if (!value) throw CLI::ValidationError(value.error().message);
  return *value;
}

void PrintWarnings(std::span<const std::string> warnings) {
  for (const std::string& warning : warnings) {
    std::fprintf(stderr, "kite: warning: %s\n", warning.c_str());
  }
}

NotApplicableFlags::NotApplicableFlags(CLI::App* command) {
  gpu_layers_ = command->add_option("--n-gpu-layers", gpu_layers_value_,
                                    "llama.cpp's -ngl, accepted and ignored: Kite does not offload to a GPU");
  flash_attention_ =
      command
          ->add_option("--flash-attn", flash_attention_value_,
                       "llama.cpp's -fa, accepted and ignored: Kite has no such switch")
          ->expected(0, 1);
}

void NotApplicableFlags::Note() const {
  if (gpu_layers_->count() > 0) {
    std::fprintf(stderr, "kite: note: -ngl/--n-gpu-layers does not apply to Kite (no GPU offload); ignored\n");
  }
  if (flash_attention_->count() > 0) {
    std::fprintf(stderr, "kite: note: -fa/--flash-attn does not apply to Kite; ignored\n");
  }
}

std::vector<std::string> LongSpellingsOfLlamaCppFlags(int argc, char** argv) {
  std::vector<std::string> args(argv, argv + argc);
  for (size_t i = 1; i < args.size(); ++i) {
    if (args[i] == "--") break;
    if (args[i] == "-ngl") args[i] = "--n-gpu-layers";
    if (args[i] == "-fa") args[i] = "--flash-attn";
  }
  return args;
}

}  // namespace kite::cli
