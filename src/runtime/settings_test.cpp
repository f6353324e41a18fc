#include "runtime/settings.h"

#include <cstdio>

#include <gtest/gtest.h>

#include <set>

namespace kite {
namespace {

using nlohmann::json;

const Setting& Get(std::string_view key) {
  const Setting* setting = FindSetting(key);
  EXPECT_NE(setting, nullptr) << key;
  return *setting;
}

std::string FlagError(std::string_view key, std::string_view flag, std::string_view text) {
  std::vector<std::string> warnings;
  Result<SettingValue> value = ParseSettingText(Get(key), flag, text, &warnings);
  return value ? "" : value.error().message;
}

std::string JsonError(std::string_view key, const json& value) {
  std::vector<std::string> warnings;
  Result<SettingValue> parsed = ParseSettingJson(Get(key), "run.json", key, value, &warnings);
  return parsed ? "" : parsed.error().message;
}

TEST(SettingsTable, KeysAndFlagsAreUniqueAndEveryEntryIsComplete) {
  std::set<std::string> keys, flags;
  for (const Setting& setting : SettingsTable()) {
    EXPECT_TRUE(keys.insert(setting.key).second) << setting.key;
    ASSERT_FALSE(setting.flags.empty()) << setting.key;
    for (const std::string& flag : setting.flags) EXPECT_TRUE(flags.insert(flag).second) << flag;
    EXPECT_FALSE(setting.help.empty()) << setting.key;
    ASSERT_NE(setting.store, nullptr) << setting.key;
    ASSERT_NE(setting.load, nullptr) << setting.key;
    // The default the table shows is itself a value the table accepts.
    std::vector<std::string> warnings;
    const SettingValue fallback = setting.load(RunSettings{});
    if (setting.type == SettingType::kInt || setting.type == SettingType::kFloat) {
      EXPECT_TRUE(ParseSettingText(setting, setting.flags[0], ValueText(fallback), &warnings))
          << setting.key;
    }
  }
}

// The reproductions of issue 9: each was accepted silently.
TEST(SettingsTable, OutOfRangeValuesAreRefusedNamingFlagValueAndRange) {
  EXPECT_EQ(FlagError("sampler.top_p", "--top-p", "2"), "--top-p 2: must be in [0, 1]");
  EXPECT_EQ(FlagError("sampler.min_p", "--min-p", "2"), "--min-p 2: must be in [0, 1]");
  EXPECT_EQ(FlagError("sampler.top_k", "--top-k", "-5"), "--top-k -5: must be >= 0");
  EXPECT_EQ(FlagError("sampler.temp", "--temp", "-1"), "--temp -1: must be >= 0");
  EXPECT_EQ(FlagError("sampler.repeat_penalty", "--repeat-penalty", "-1"),
            "--repeat-penalty -1: must be > 0");
  EXPECT_EQ(FlagError("sampler.repeat_penalty", "--repeat-penalty", "0"),
            "--repeat-penalty 0: must be > 0");
  EXPECT_EQ(FlagError("sampler.repeat_last_n", "--repeat-last-n", "-2"),
            "--repeat-last-n -2: must be >= -1");
  EXPECT_EQ(FlagError("context", "--ctx", "-1"), "--ctx -1: must be >= 0");
  EXPECT_EQ(FlagError("prefill_chunk", "--prefill-chunk", "0"), "--prefill-chunk 0: must be >= 1");
  EXPECT_EQ(FlagError("n_predict", "-n", "-2"), "-n -2: must be >= -1");
  EXPECT_EQ(FlagError("context", "--ctx", "3000000000"), "--ctx 3000000000: must be <= 2147483647");
  EXPECT_EQ(FlagError("kv_type", "--kv-type", "f8"), "--kv-type f8: must be one of f16, f32, q8_0");
  EXPECT_EQ(FlagError("chip", "--chip", "9gen9"),  // the chips/ files
            "--chip 9gen9: must be one of 888, 8elite, 8elite-gen5, 8gen1, 8gen2, 8gen3, sa8295p, "
            "x-elite");
  EXPECT_EQ(FlagError("backend", "--backend", "gpu"),
            "--backend gpu: must be one or more of ref, cpu, npusim, comma-separated");
  EXPECT_EQ(FlagError("backend", "--backend", "cpu,gpu"),
            "--backend cpu,gpu: must be one or more of ref, cpu, npusim, comma-separated");
  EXPECT_EQ(FlagError("backend", "--backend", "cpu,"),
            "--backend cpu,: must be one or more of ref, cpu, npusim, comma-separated");
  EXPECT_EQ(FlagError("backend", "--backend", "cpu,cpu"), "--backend cpu,cpu: names cpu twice");
  EXPECT_EQ(FlagError("kv_type", "--kv-type", "f16,f32"),  // a single choice takes no list
            "--kv-type f16,f32: must be one of f16, f32, q8_0");
  // The edges are allowed.
  for (const auto& [key, text] : std::vector<std::pair<std::string, std::string>>{
           {"sampler.top_p", "0"}, {"sampler.top_p", "1"}, {"sampler.temp", "0"},
           {"sampler.repeat_last_n", "-1"}, {"n_predict", "-1"}, {"sampler.seed", "-1"},
           {"sampler.presence_penalty", "-2.5"}, {"context", "0"}, {"backend", "cpu,ref"}}) {
    EXPECT_EQ(FlagError(key, "--x", text), "") << key << " " << text;
  }
}

TEST(SettingsTable, NanAndInfinitiesAreRefusedEverywhere) {
  for (const std::string text : {"nan", "NaN", "inf", "-inf", "infinity", "1e39"}) {
    EXPECT_EQ(FlagError("sampler.temp", "--temp", text), "--temp " + text + ": must be a finite number >= 0");
    EXPECT_EQ(FlagError("sampler.presence_penalty", "--presence-penalty", text),
              "--presence-penalty " + text + ": must be a finite number");
  }
  EXPECT_EQ(JsonError("sampler.temp", 1e39), "run.json: \"sampler.temp\" = 1e+39: must be a finite number >= 0");
}

TEST(SettingsTable, BadTextIsRefusedWithTheExpectedKind) {
  EXPECT_EQ(FlagError("sampler.top_k", "--top-k", "x"), "--top-k x: expected an integer");
  EXPECT_EQ(FlagError("sampler.top_k", "--top-k", "4.5"), "--top-k 4.5: expected an integer");
  EXPECT_EQ(FlagError("sampler.top_k", "--top-k", ""), "--top-k : expected an integer");
  EXPECT_EQ(FlagError("sampler.temp", "--temp", "0.5x"), "--temp 0.5x: expected a number");
  EXPECT_EQ(FlagError("stop", "--stop", ""), "--stop : must not be empty");
  EXPECT_EQ(JsonError("sampler.top_k", "5"), "run.json: \"sampler.top_k\" = \"5\": expected an integer, found string");
  EXPECT_EQ(JsonError("sampler.top_k", 5.0), "run.json: \"sampler.top_k\" = 5.0: expected an integer, found number");
  EXPECT_EQ(JsonError("stop", json::array({"a", 1})), "run.json: \"stop\" = [\"a\",1]: expected an array of strings");
  EXPECT_EQ(JsonError("check_tensors", 1), "run.json: \"check_tensors\" = 1: expected true or false, found integer");
}

// The command line and run.json give the same reason, each naming its own source.
TEST(SettingsTable, FlagAndKeyGiveTheSameMessage) {
  const std::vector<std::tuple<std::string, std::string, std::string, json>> cases = {
      {"sampler.top_p", "--top-p", "2", 2},
      {"sampler.temp", "--temp", "-1", -1},
      {"sampler.top_k", "--top-k", "-5", -5},
      {"sampler.repeat_penalty", "--repeat-penalty", "-1", -1},
      {"kv_type", "--kv-type", "q1", "q1"},
  };
  for (const auto& [key, flag, text, value] : cases) {
    const std::string from_flag = FlagError(key, flag, text);
    const std::string from_key = JsonError(key, value);
    ASSERT_FALSE(from_flag.empty()) << key;
    const std::string reason = from_flag.substr(from_flag.find(": "));
    EXPECT_EQ(from_key, "run.json: \"" + key + "\" = " + value.dump() + reason);
  }
}

// The CPUs this process may use as coreutils' nproc counts them (it honours the affinity mask):
// an oracle for the clamp that is not the code under test.
int32_t NprocCount() {
  std::FILE* pipe = ::popen("nproc", "r");
  int count = 0;
  if (pipe != nullptr && std::fscanf(pipe, "%d", &count) != 1) count = 0;
  if (pipe != nullptr) ::pclose(pipe);
  return count;
}

TEST(SettingsTable, ThreadsAboveTheCpusAreClampedWithAWarningNamingBothNumbers) {
  const int32_t cpus = NprocCount();
  ASSERT_GE(cpus, 1);
  EXPECT_EQ(UsableCpuCount(), cpus);
  std::vector<std::string> warnings;
  Result<SettingValue> value = ParseSettingText(Get("threads"), "--threads", "40000", &warnings);
  ASSERT_TRUE(value) << value.error().message;
  EXPECT_EQ(std::get<int64_t>(*value), cpus);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("--threads 40000"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[0].find("using " + std::to_string(cpus)), std::string::npos) << warnings[0];

  warnings.clear();
  RunSettings settings;
  ASSERT_TRUE(ApplySettingsJson(json{{"threads", 1000000}}, "run.json", &settings, &warnings));
  EXPECT_EQ(settings.engine.threads, cpus);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("run.json: \"threads\" = 1000000"), std::string::npos) << warnings[0];

  warnings.clear();
  value = ParseSettingText(Get("threads"), "--threads", std::to_string(cpus), &warnings);
  ASSERT_TRUE(value);
  EXPECT_EQ(std::get<int64_t>(*value), cpus);
  EXPECT_TRUE(warnings.empty());
}

TEST(SettingsTable, FloatActivationsTurnsAModelsActivationEncodingsOff) {
  RunSettings settings;
  EXPECT_TRUE(settings.engine.quantized_activations);
  std::vector<std::string> warnings;
  ASSERT_TRUE(ApplySettingsJson(json{{"float_activations", true}}, "run.json", &settings, &warnings));
  EXPECT_FALSE(settings.engine.quantized_activations);
}

TEST(SettingsTable, NoAmxKeepsTheCpuBackendOffAmx) {
  RunSettings settings;
  EXPECT_TRUE(settings.engine.amx);
  std::vector<std::string> warnings;
  ASSERT_TRUE(ApplySettingsJson(json{{"no_amx", true}}, "run.json", &settings, &warnings));
  EXPECT_FALSE(settings.engine.amx);
}

TEST(SettingsTable, JsonAppliesNestedKeysAndRefusesUnknownOnes) {
  RunSettings settings;
  std::vector<std::string> warnings;
  const json root = {{"model", "m"},         {"context", 64},
                     {"kv_type", "f32"},     {"check_tensors", true},
                     {"ignore_eos", true},   {"stop", {"\n%"}},
                     {"n_predict", -1},      {"sampler", {{"temp", 0.5}, {"top_k", 3}, {"seed", -1}}}};
  ASSERT_TRUE(ApplySettingsJson(root, "run.json", &settings, &warnings));
  EXPECT_EQ(settings.model, "m");
  EXPECT_EQ(settings.engine.context_length, 64);
  EXPECT_EQ(settings.engine.kv_dtype, DType::kF32);
  EXPECT_TRUE(settings.engine.check_tensors);
  EXPECT_TRUE(settings.ignore_eos);
  EXPECT_EQ(settings.stop, std::vector<std::string>{"\n%"});
  EXPECT_EQ(settings.n_predict, -1);
  EXPECT_EQ(settings.sampler.temperature, 0.5f);
  EXPECT_EQ(settings.sampler.top_k, 3);
  EXPECT_TRUE(settings.random_seed);

  Status unknown = ApplySettingsJson(json{{"sampler", {{"tmep", 1}}}}, "run.json", &settings, &warnings);
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().message.find("unknown key \"tmep\" in \"sampler\""), std::string::npos)
      << unknown.error().message;
  EXPECT_NE(unknown.error().message.find("top_p"), std::string::npos) << unknown.error().message;
  Status top = ApplySettingsJson(json{{"tmep", 1}}, "run.json", &settings, &warnings);
  ASSERT_FALSE(top);
  EXPECT_NE(top.error().message.find("known: model, context"), std::string::npos) << top.error().message;
  EXPECT_FALSE(ApplySettingsJson(json{{"sampler", 3}}, "run.json", &settings, &warnings));
  EXPECT_FALSE(ApplySettingsJson(json::array(), "run.json", &settings, &warnings));
}

TEST(SettingsTable, RandomSeedIsDrawnOnceAndKeptAfterwards) {
  RunSettings settings;
  std::vector<std::string> warnings;
  const Setting& seed = Get("sampler.seed");
  seed.store(settings, *ParseSettingText(seed, "--seed", "-1", &warnings));
  EXPECT_EQ(std::get<int64_t>(seed.load(settings)), -1);
  ASSERT_TRUE(DrawSeedIfRandom(&settings));
  const uint64_t drawn = settings.sampler.seed;
  EXPECT_FALSE(DrawSeedIfRandom(&settings));
  EXPECT_EQ(settings.sampler.seed, drawn);
  // The printed seed is accepted back by --seed.
  seed.store(settings, *ParseSettingText(seed, "--seed", std::to_string(drawn), &warnings));
  EXPECT_EQ(settings.sampler.seed, drawn);
  EXPECT_FALSE(settings.random_seed);
}

TEST(SettingsTable, HelpLinesGiveRangeAndDefault) {
  EXPECT_EQ(HelpLine(Get("sampler.top_p")),
            "Nucleus: keep the smallest set of tokens reaching P; 1 keeps all (in [0, 1]; default 0.95)");
  EXPECT_EQ(HelpLine(Get("threads")).find("(>= 0; default 0: all CPUs)") != std::string::npos, true)
      << HelpLine(Get("threads"));
  EXPECT_NE(HelpLine(Get("kv_type")).find("one of f16, f32, q8_0; default f16"), std::string::npos)
      << HelpLine(Get("kv_type"));
  for (const Setting& setting : SettingsTable()) {
    if (setting.type == SettingType::kInt || setting.type == SettingType::kFloat) {
      EXPECT_NE(HelpLine(setting).find("default"), std::string::npos) << setting.key;
    }
  }
}

}  // namespace
}  // namespace kite
