// The command-line habits llama.cpp and Genie users bring, end to end: exit status 2 for a bad
// command line, values checked by the settings table (the same message from a flag and from
// run.json), -t clamped to the CPUs, -n -1, --seed -1, escapes in -p and --stop, -r, -c as the
// context, --ignore-eos, -ngl/-fa noted, and Genie's genie_config.json read by --config.
// Each reproduction of issue 9 is one of these tests.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli_runner.h"

namespace kite::testing {
namespace {

using nlohmann::json;

constexpr int kBadCommandLine = 2;

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::string TempPath(const std::string& name) {
  return (std::filesystem::path(::testing::TempDir()) /
          ("kite_habits_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

std::vector<std::string> Demo(std::vector<std::string> args) {
  std::vector<std::string> all = {"run", "-m", SourcePath("models/demo"), "-t", "1"};
  all.insert(all.end(), args.begin(), args.end());
  return all;
}

json RunJson(const std::vector<std::string>& args) {
  CommandResult result = RunKite(args);
  EXPECT_EQ(result.exit_code, 0) << result.err;
  return result.exit_code == 0 ? json::parse(result.out) : json::object();
}

TEST(CliHabits, BadCommandLinesExit2WithTheParsersMessage) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {Demo({"-p", "hi", "--bogus"}), "--bogus"},
      {Demo({"-p", "hi", "--top-k", "x"}), "--top-k x: expected an integer"},
      {Demo({"-p", "hi", "--top-k"}), "--top-k"},
      {{"inspect"}, "FILE"},
      {{"eval", "ppl", "-m", SourcePath("models/demo"), "-f", "x", "-t", "-1"}, "--threads -1: must be >= 0"},
  };
  for (const Case& c : cases) {
    CommandResult result = RunKite(c.args);
    EXPECT_EQ(result.exit_code, kBadCommandLine) << c.message << ": " << result.err;
    EXPECT_TRUE(Contains(result.err, c.message)) << c.message << " in: " << result.err;
  }
}

TEST(CliHabits, UnknownSubcommandIsNamedWithTheList) {
  CommandResult result = RunKite({"frobnicate"});
  EXPECT_EQ(result.exit_code, kBadCommandLine);
  EXPECT_TRUE(Contains(result.err, "kite: unknown subcommand 'frobnicate'")) << result.err;
  EXPECT_TRUE(Contains(result.err, "run, chat")) << result.err;

  CommandResult nothing = RunKite({});
  EXPECT_EQ(nothing.exit_code, kBadCommandLine);
  EXPECT_TRUE(Contains(nothing.err, "Subcommands:")) << nothing.err;
  CommandResult help = RunKite({"--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_TRUE(Contains(help.out, "Subcommands:")) << help.out;
}

// The flags' help comes from the settings table: each line gives its range and default.
TEST(CliHabits, RunHelpGivesEachSettingsRangeAndDefault) {
  CommandResult help = RunKite({"run", "--help"});
  ASSERT_EQ(help.exit_code, 0) << help.err;
  for (const std::string line :
       {"--top-p FLOAT", "in [0, 1]; default 0.95", "--repeat-penalty FLOAT", "> 0; default 1",
        "-c,--ctx,--ctx-size INT", "-r,--stop,--reverse-prompt", "--ignore-eos", "--check-tensors",
        "-n,--n-predict INT", ">= -1; default 128", "one of f16, f32, q8_0; default f16", "--config",
        "--no-escape", "--n-gpu-layers", "--flash-attn"}) {
    EXPECT_TRUE(Contains(help.out, line)) << line << " in:\n" << help.out;
  }
}

// Issue 9: each was accepted silently (--repeat-penalty -1 emitted BOS every step, --temp nan
// gave the same text for every seed).
TEST(CliHabits, OutOfRangeSamplerFlagsAreRefused) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--repeat-penalty", "-1"}, "--repeat-penalty -1: must be > 0"},
      {{"--temp", "nan"}, "--temp nan: must be a finite number >= 0"},
      {{"--temp", "inf"}, "--temp inf: must be a finite number >= 0"},
      {{"--top-p", "2"}, "--top-p 2: must be in [0, 1]"},
      {{"--min-p", "2"}, "--min-p 2: must be in [0, 1]"},
      {{"--top-k", "-5"}, "--top-k -5: must be >= 0"},
      {{"--temp", "-1"}, "--temp -1: must be >= 0"},
      {{"-n", "-2"}, "--n-predict -2: must be >= -1"},
      {{"--kv-type", "f8"}, "--kv-type f8: must be one of f16, f32, q8_0"},
  };
  for (const auto& [flags, message] : cases) {
    std::vector<std::string> args = Demo({"-p", "hi", "-n", "1"});
    args.insert(args.end(), flags.begin(), flags.end());
    CommandResult result = RunKite(args);
    EXPECT_EQ(result.exit_code, kBadCommandLine) << message << ": " << result.err;
    EXPECT_TRUE(Contains(result.err, message)) << message << " in: " << result.err;
  }
}

// run.json is checked by the same table: the same reason, naming the file and the key. A bad
// file is exit 1 (a bad command line is 2).
TEST(CliHabits, RunJsonValuesGiveTheFlagsMessageNamingTheKey) {
  const std::string path = TempPath("range.json");
  const std::vector<std::pair<json, std::string>> cases = {
      {{{"sampler", {{"top_p", 2}}}}, "\"sampler.top_p\" = 2: must be in [0, 1]"},
      {{{"sampler", {{"repeat_penalty", -1}}}}, "\"sampler.repeat_penalty\" = -1: must be > 0"},
      {{{"sampler", {{"top_k", -5}}}}, "\"sampler.top_k\" = -5: must be >= 0"},
      {{{"sampler", {{"temp", -1}}}}, "\"sampler.temp\" = -1: must be >= 0"},
      {{{"sampler", {{"min_p", 2}}}}, "\"sampler.min_p\" = 2: must be in [0, 1]"},
      {{{"n_predict", -2}}, "\"n_predict\" = -2: must be >= -1"},
  };
  for (const auto& [config, message] : cases) {
    json file = config;
    file["model"] = SourcePath("models/demo");
    std::ofstream(path) << file.dump();
    CommandResult result = RunKite({"run", "--config", path, "-p", "hi"});
    EXPECT_EQ(result.exit_code, 1) << message << ": " << result.err;
    EXPECT_TRUE(Contains(result.err, path + ": " + message)) << message << " in: " << result.err;
  }
  std::filesystem::remove(path);
}

// Issue 9: `-t 40000` aborted with exit 134, and so did "threads": 1000000 in run.json.
TEST(CliHabits, ThreadsAboveTheCpusAreClampedWithAWarning) {
  CommandResult flag = RunKite({"run", "-m", SourcePath("models/demo"), "-p", "hi", "-n", "1", "-t", "40000"});
  EXPECT_EQ(flag.exit_code, 0) << flag.err;
  EXPECT_TRUE(Contains(flag.err, "--threads 40000: more than the ")) << flag.err;
  EXPECT_TRUE(Contains(flag.err, "; using ")) << flag.err;

  const std::string path = TempPath("threads.json");
  std::ofstream(path) << json{{"model", SourcePath("models/demo")}, {"threads", 1000000}}.dump();
  CommandResult file = RunKite({"run", "--config", path, "-p", "hi", "-n", "1"});
  EXPECT_EQ(file.exit_code, 0) << file.err;
  EXPECT_TRUE(Contains(file.err, path + ": \"threads\" = 1000000: more than the ")) << file.err;
  std::filesystem::remove(path);
}

// Issue 9: `-n -1` generated nothing; llama.cpp generates until EOS or the context is full.
TEST(CliHabits, NPredictMinusOneGeneratesUntilEosOrTheContextIsFull) {
  const json out = RunJson(Demo({"-p", "The secret of life is", "-n", "-1", "--ctx", "32", "--json"}));
  ASSERT_TRUE(out.contains("ids"));
  EXPECT_GT(out["ids"].size(), 0u);
  const std::string reason = out["stats"]["stop_reason"];
  EXPECT_TRUE(reason == "eos" || reason == "context_full") << reason;
  // Past EOS too, it fills the context: every position after the prompt, and one more sampled.
  const json full =
      RunJson(Demo({"-p", "The secret of life is", "-n", "-1", "-c", "32", "--ignore-eos", "--json"}));
  ASSERT_TRUE(full.contains("ids"));
  EXPECT_EQ(full["stats"]["stop_reason"], "context_full");
  EXPECT_EQ(full["stats"]["context"], 32);
  EXPECT_EQ(full["ids"].size(), 32 - full["prompt_ids"].size() + 1);
}

// Issue 9: `--seed -1` was the fixed seed 0. Now it draws one and prints it, so the run can be
// repeated with --seed.
TEST(CliHabits, SeedMinusOneIsRandomAndPrintedForRepeating) {
  const std::vector<std::string> sampled = {"-p", "The secret of life is", "-n", "24", "--temp", "1.5",
                                            "--top-k", "0", "--top-p", "1", "--min-p", "0", "--json"};
  std::vector<std::string> args = Demo(sampled);
  args.insert(args.end(), {"--seed", "-1"});
  CommandResult first = RunKite(args);
  CommandResult second = RunKite(args);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  ASSERT_EQ(second.exit_code, 0) << second.err;
  ASSERT_TRUE(first.err.starts_with("seed: ")) << first.err;
  ASSERT_TRUE(second.err.starts_with("seed: ")) << second.err;
  const std::string seed = first.err.substr(6, first.err.find('\n') - 6);
  EXPECT_NE(seed, second.err.substr(6, second.err.find('\n') - 6));
  EXPECT_NE(json::parse(first.out)["ids"], json::parse(second.out)["ids"]);

  args = Demo(sampled);
  args.insert(args.end(), {"--seed", seed});
  CommandResult again = RunKite(args);
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_FALSE(Contains(again.err, "seed: "));
  EXPECT_EQ(json::parse(again.out)["ids"], json::parse(first.out)["ids"]);
}

// The README's example: `--stop '\n%'` pasted into a shell passes backslash-n, which -e (on by
// default) turns into a newline, so generation stops before the fortune separator.
TEST(CliHabits, EscapesInStopStringsAndPrompts) {
  const std::vector<std::string> readme = {"-p", "The secret of life is", "-n", "96", "--temp", "0.7",
                                           "--top-p", "0.9", "--seed", "7", "--json"};
  std::vector<std::string> args = Demo(readme);
  args.insert(args.end(), {"--stop", "\\n%"});
  const json stopped = RunJson(args);
  EXPECT_EQ(stopped["stats"]["stop_reason"], "stop_string") << stopped.dump();
  EXPECT_FALSE(Contains(stopped["text"], "\n%"));
  args = Demo(readme);
  args.insert(args.end(), {"-r", "\\n%"});
  EXPECT_EQ(RunJson(args)["ids"], stopped["ids"]);  // -r/--reverse-prompt: llama.cpp's --stop
  args = Demo(readme);
  args.insert(args.end(), {"--reverse-prompt", "\n%", "--no-escape"});
  EXPECT_EQ(RunJson(args)["ids"], stopped["ids"]);  // a real newline, taken as typed
  args = Demo(readme);
  args.insert(args.end(), {"--stop", "\\n%", "--no-escape"});
  EXPECT_NE(RunJson(args)["stats"]["stop_reason"], "stop_string");  // backslash-n never appears

  const json escaped = RunJson(Demo({"-p", "a\\tb\\x41\\\\", "-n", "1", "--json"}));
  const json typed = RunJson(Demo({"-p", "a\tbA\\", "-n", "1", "--no-escape", "--json"}));
  EXPECT_EQ(escaped["prompt_ids"], typed["prompt_ids"]);
  const json literal = RunJson(Demo({"-p", "a\\tb\\x41\\\\", "-n", "1", "--no-escape", "--json"}));
  EXPECT_NE(literal["prompt_ids"], typed["prompt_ids"]);
}

// -ngl and -fa mean nothing to Kite: accepted, one note each, the same output.
TEST(CliHabits, GpuLayersAndFlashAttentionAreNotedAndIgnored) {
  const std::vector<std::string> greedy = {"-p", "The secret of life is", "--temp", "0", "-n", "5", "--json"};
  std::vector<std::string> args = Demo(greedy);
  args.insert(args.end(), {"-ngl", "99", "-fa"});
  CommandResult noted = RunKite(args);
  ASSERT_EQ(noted.exit_code, 0) << noted.err;
  EXPECT_TRUE(Contains(noted.err, "-ngl/--n-gpu-layers does not apply to Kite")) << noted.err;
  EXPECT_TRUE(Contains(noted.err, "-fa/--flash-attn does not apply to Kite")) << noted.err;
  EXPECT_EQ(json::parse(noted.out)["ids"], RunJson(Demo(greedy))["ids"]);
}

// Genie's own genie_config.json: its context, sampler and n-threads become Kite's settings, the
// model is the tokenizer's folder, and each field Kite does not use is named.
TEST(CliHabits, GenieConfigIsReadAndUnusedFieldsAreNamed) {
  const std::string config = SourcePath("testdata/genie/genie_config.json");
  CommandResult genie = RunKite({"run", "--config", config, "-p", "The secret of life is", "-n", "16", "--json"});
  ASSERT_EQ(genie.exit_code, 0) << genie.err;
  const json same = RunJson({"run", "-m", SourcePath("models/demo"), "--ctx", "256", "--temp", "0.7",
                             "--top-k", "40", "--top-p", "0.9", "--seed", "7", "-t", "1", "-p",
                             "The secret of life is", "-n", "16", "--json"});
  EXPECT_EQ(json::parse(genie.out)["ids"], same["ids"]);
  EXPECT_EQ(json::parse(genie.out)["stats"]["context"], 256);
  for (const std::string field :
       {"dialog.context.n-vocab", "dialog.context.eos-token", "dialog.engine.backend.type",
        "dialog.engine.backend.QnnHtp.use-mmap", "dialog.engine.model.binary.ctx-bins"}) {
    EXPECT_TRUE(Contains(genie.err, config + ": " + field + ": not used by Kite")) << field << " in " << genie.err;
  }
  EXPECT_FALSE(Contains(genie.err, "version")) << genie.err;

  // The same checks as run.json, in Genie's spelling; "greedy" wins over "temp".
  std::ifstream in(config);
  json file = json::parse(in);
  file["dialog"]["tokenizer"]["path"] = SourcePath("models/demo/tokenizer.model");
  const std::string path = TempPath("genie_config.json");
  file["dialog"]["sampler"]["greedy"] = true;
  file["dialog"]["sampler"]["token-penalty"] = {{"version", 1},
                                                {"penalize-last-n", 64},
                                                {"repetition-penalty", 1.0},
                                                {"presence-penalty", 0.0},
                                                {"frequency-penalty", 0.0}};
  file["dialog"]["max-num-tokens"] = 5;
  file["dialog"]["stop-sequence"] = {"no such text"};
  std::ofstream(path) << file.dump();
  const json greedy = RunJson({"run", "--config", path, "-p", "The secret of life is", "--json"});
  EXPECT_EQ(greedy["ids"], json({261, 439, 452, 304, 261}));  // README greedy ids
  file["dialog"]["stop-sequence"] = {""};
  std::ofstream(path) << file.dump();
  CommandResult empty_stop = RunKite({"run", "--config", path, "-p", "hi"});
  EXPECT_EQ(empty_stop.exit_code, 1);
  EXPECT_TRUE(Contains(empty_stop.err, "\"dialog.stop-sequence\" = [\"\"]: must not be empty")) << empty_stop.err;
  file["dialog"]["stop-sequence"] = {"no such text"};
  file["dialog"]["sampler"]["token-penalty"]["repetition-penalty"] = -1;
  std::ofstream(path) << file.dump();
  CommandResult penalty = RunKite({"run", "--config", path, "-p", "hi"});
  EXPECT_EQ(penalty.exit_code, 1);
  EXPECT_TRUE(Contains(penalty.err, "\"dialog.sampler.token-penalty.repetition-penalty\" = -1: must be > 0"))
      << penalty.err;
  file["dialog"]["sampler"]["token-penalty"]["repetition-penalty"] = 1.0;
  file["dialog"]["sampler"]["top-p"] = 2;
  std::ofstream(path) << file.dump();
  CommandResult refused = RunKite({"run", "--config", path, "-p", "hi"});
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_TRUE(Contains(refused.err, path + ": \"dialog.sampler.top-p\" = 2: must be in [0, 1]")) << refused.err;
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace kite::testing
