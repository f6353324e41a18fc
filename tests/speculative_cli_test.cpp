// Speculative decoding from the `kite` command: `kite run --spec ngram` and `--draft MODEL` print
// the tokens plain greedy decoding prints, report what the drafts did in --json, refuse a draft
// model of another vocabulary naming both; `kite chat` speculates too; `kite bench --spec` says
// whether both modes gave the same tokens.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_runner.h"

namespace kite {
namespace {

using ::kite::testing::RunKite;
using ::kite::testing::SourcePath;

std::vector<std::string> RunArgs(std::vector<std::string> extra) {
  std::vector<std::string> args = {"run", "-m", SourcePath("models/demo"), "-f",
                                   SourcePath("bench/speculative_quote.txt"), "-n", "60",
                                   "--temp", "0", "--ignore-eos", "--json"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

nlohmann::json RunJson(std::vector<std::string> extra) {
  const auto result = RunKite(RunArgs(std::move(extra)));
  EXPECT_EQ(result.exit_code, 0) << result.err;
  return result.exit_code == 0 ? nlohmann::json::parse(result.out) : nlohmann::json();
}

TEST(CliSpeculative, RunGivesThePlainGreedyTokensAndSaysWhatTheDraftsDid) {
  const nlohmann::json plain = RunJson({});
  ASSERT_FALSE(plain.is_null());
  EXPECT_EQ(plain["stats"]["speculative"]["mode"], "none");
  for (const std::vector<std::string>& spec :
       {std::vector<std::string>{"--spec", "ngram", "--ngram-min", "1"},
        std::vector<std::string>{"--draft", SourcePath("models/demo")}}) {
    const nlohmann::json out = RunJson(spec);
    ASSERT_FALSE(out.is_null());
    EXPECT_EQ(out["ids"], plain["ids"]) << spec[0];
    EXPECT_EQ(out["text"], plain["text"]) << spec[0];
    // How many passes follow depends on what they cost on this machine (drafting switches off
    // where it does not pay, as on this small model); the first always happens.
    const nlohmann::json& stats = out["stats"]["speculative"];
    EXPECT_GT(stats["drafted_tokens"].get<int>(), 0) << stats.dump();
    if (spec[0] == "--draft") {  // the model as its own draft: every draft is kept
      EXPECT_EQ(stats["accepted_tokens"], stats["drafted_tokens"]) << stats.dump();
    }
  }
  // Without --json the timing line ends with the drafts' summary.
  std::vector<std::string> args = RunArgs({"--spec", "ngram"});
  args.erase(std::find(args.begin(), args.end(), "--json"));
  const auto text = RunKite(args);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.err.find("spec ngram: "), std::string::npos) << text.err;
  EXPECT_NE(text.err.find("drafts accepted"), std::string::npos) << text.err;
}

TEST(CliSpeculative, BadDraftSettingsAreRefusedWithTheirNames) {
  auto result = RunKite(RunArgs({"--draft", SourcePath("testdata/reference/llama-gqa")}));
  EXPECT_NE(result.exit_code, 0);
  EXPECT_NE(result.err.find("different vocabularies"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("llama-gqa"), std::string::npos) << result.err;
  result = RunKite(RunArgs({"--spec", "draft"}));
  EXPECT_NE(result.exit_code, 0);
  EXPECT_NE(result.err.find("--draft MODEL"), std::string::npos) << result.err;
  result = RunKite(RunArgs({"--spec", "ngram", "--ngram-min", "5", "--ngram-max", "3"}));
  EXPECT_NE(result.exit_code, 0);
  EXPECT_NE(result.err.find("--ngram-min 5"), std::string::npos) << result.err;
  result = RunKite(RunArgs({"--spec", "guess"}));
  EXPECT_NE(result.exit_code, 0);
  EXPECT_NE(result.err.find("none, ngram, draft"), std::string::npos) << result.err;
}

TEST(CliSpeculative, ChatSpeculatesToo) {
  const std::vector<std::string> args = {"chat", "-m", SourcePath("models/demo"), "-n", "24",
                                         "--temp", "0"};
  std::vector<std::string> speculative = args;
  speculative.insert(speculative.end(), {"--spec", "ngram", "--ngram-min", "1"});
  const std::string turns = "say it again and again and again\nagain\n";
  const auto plain = RunKite(args, turns);
  const auto spec = RunKite(speculative, turns);
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  ASSERT_EQ(spec.exit_code, 0) << spec.err;
  EXPECT_EQ(spec.out, plain.out);
}

TEST(CliSpeculative, BenchComparesBothModesOnOnePrompt) {
  const auto result = RunKite({"bench", "-m", SourcePath("models/demo"), "--spec", "ngram", "-f",
                               SourcePath("bench/speculative_quote.txt"), "-n", "32", "-r", "1",
                               "--json"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const nlohmann::json out = nlohmann::json::parse(result.out);
  EXPECT_EQ(out["mode"], "ngram");
  EXPECT_EQ(out["identical_output"], true);
  EXPECT_GT(out["plain_ts"].get<double>(), 0);
  EXPECT_GT(out["speculative_ts"].get<double>(), 0);
}

}  // namespace
}  // namespace kite
