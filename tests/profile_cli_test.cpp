// `kite profile` end to end: the flags, the refusals users hit first, and the files it writes.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "cli_runner.h"

namespace kite::testing {
namespace {

namespace fs = std::filesystem;

TEST(CliProfile, UnknownChipIsRefusedListingTheChips) {
  const CommandResult r = RunKite({"profile", "llama-3-8b", "--chip", "8gen9"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(r.out.empty());
  EXPECT_NE(r.err.find("unknown chip '8gen9'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("8elite-gen5, 8gen1, 8gen2, 8gen3, sa8295p, x-elite"), std::string::npos)
      << r.err;
}

TEST(CliProfile, UnknownRecipeAndUnknownModelAreRefused) {
  CommandResult r = RunKite({"profile", "llama-3-8b", "--chip", "8gen3", "--recipe", "w4a4"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("the recipes are: w4a16, w8a16, w8a8, w4f16"), std::string::npos) << r.err;
  r = RunKite({"profile", "llama-9-800b", "--chip", "8gen3"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("llama-3-8b"), std::string::npos) << r.err;
}

TEST(CliProfile, JsonTraceAndHtmlFromAnHfConfig) {
  const fs::path dir = fs::path(::testing::TempDir()) / ("kite_profile_" + std::to_string(getpid()));
  fs::create_directories(dir);
  const std::string trace = (dir / "t.json").string(), html = (dir / "r.html").string();
  const CommandResult r =
      RunKite({"profile", SourcePath("testdata/reference/llama-gqa/config.json"), "--chip",
               "8elite", "--ctx", "256", "--json", "--trace", trace, "--html", html});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["options"]["ctx"], 256);
  EXPECT_EQ(j["options"]["chunk"], 128);
  EXPECT_GT(j["summary"]["decode_tokens_per_s"].get<double>(), 0);
  std::ifstream t(trace);
  const nlohmann::json events = nlohmann::json::parse(t);
  EXPECT_GT(events["traceEvents"].size(), 10u);
  std::ifstream h(html);
  std::stringstream page;
  page << h.rdbuf();
  EXPECT_NE(page.str().find("<svg"), std::string::npos);
  fs::remove_all(dir);
}

TEST(CliProfile, TextStartsWithTheSummary) {
  const CommandResult r = RunKite({"profile", "llama-3-8b", "--chip", "8gen3", "--prompt", "300"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("time to first token (300-token prompt)"), std::string::npos);
  EXPECT_LT(r.out.find("time to first token"), r.out.find("prefill chunk:"));
  EXPECT_NE(r.out.find("NPU 482 ops, CPU 1 ops"), std::string::npos);
  EXPECT_NE(r.out.find("blk.31.ffn_down"), std::string::npos);
}

}  // namespace
}  // namespace kite::testing
