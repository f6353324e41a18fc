// `kite eval`: perplexity with llama.cpp's protocol against the PyTorch reference
// (testdata/eval/*.json from tools/reference_ppl.py).
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_runner.h"

namespace kite::testing {
namespace {

using json = nlohmann::json;

json ReadJson(const std::string& relative) {
  std::ifstream in(SourcePath(relative));
  return json::parse(in);
}

// The defaults: --ctx is the demo's trained 256 positions, --chunks 32 (4,064 scored tokens).
TEST(CliEval, LlamaProtocolPerplexityMatchesPytorchReference) {
  const json golden = ReadJson("testdata/eval/demo-heldout.llama-ppl.json");
  CommandResult result = RunKite({"eval", "ppl", "-m", SourcePath("models/demo"), "-f",
                                  SourcePath("models/demo/heldout.txt"), "--protocol", "llama",
                                  "--json"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const json out = json::parse(result.out);
  EXPECT_EQ(out["protocol"], "llama");
  EXPECT_EQ(out["ctx"], golden["window"]);
  EXPECT_EQ(out["tokens"], golden["tokens"]);
  EXPECT_EQ(out["windows"], golden["windows"]);
  const double ppl = golden["ppl"].get<double>();
  EXPECT_NEAR(out["ppl"].get<double>(), ppl, 1e-4 * ppl);
  EXPECT_NEAR(out["ppl_error"].get<double>(), golden["ppl_error"].get<double>(),
              1e-3 * golden["ppl_error"].get<double>());
  EXPECT_NEAR(out["nll"].get<double>() / out["tokens"].get<double>(), golden["nll"].get<double>(),
              1e-4);
  EXPECT_NE(result.err.find("window 32/32"), std::string::npos) << result.err;
}

TEST(CliEval, ChunksKeepsTheFirstWindowsAndTooShortTextsAreNamed) {
  const std::string head = SourcePath("testdata/eval/demo-heldout-head.txt");
  CommandResult two = RunKite({"eval", "ppl", "-m", SourcePath("models/demo"), "-f", head, "--ctx",
                               "64", "--chunks", "2", "--json"});
  ASSERT_EQ(two.exit_code, 0) << two.err;
  EXPECT_EQ(json::parse(two.out)["windows"], 2);
  EXPECT_EQ(json::parse(two.out)["tokens"], 128);

  // 999 tokens with BOS: three chunks of 256 but not two of 512.
  CommandResult short_text = RunKite({"eval", "ppl", "-m", SourcePath("models/demo"), "-f", head,
                                      "--protocol", "llama", "--ctx", "512"});
  EXPECT_EQ(short_text.exit_code, 1);
  EXPECT_NE(short_text.err.find("the llama protocol needs at least 1024 tokens (two chunks of "
                                "--ctx 512) and the text has 999"),
            std::string::npos)
      << short_text.err;
}

}  // namespace
}  // namespace kite::testing
