// npusim's FP16 path (docs/npusim.md §11) on the bundled demo model compiled as
// `kite compile --chip 8gen3 --recipe w4f16` (int4 per-channel weights, float activations): every
// node runs on npusim, and `kite eval ppl` is within 0.1% of the cpu backend's (f32) on the same
// file. On a chip without FP16 (888, v68) the recipe is refused, and a float-activation file's
// nodes are declined with the fp16 reason and run on the CPU.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_runner.h"
#include "runtime/engine.h"

namespace kite {
namespace {

using testing::RunKite;
using testing::SourcePath;

class NpusimFp16ModelTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = ::testing::TempDir() + "kite_npusim_fp16";
    std::filesystem::create_directories(dir_);
    const auto made = RunKite({"compile", SourcePath("models/demo"), "-o", Compiled(), "--chip",
                               "8gen3", "--recipe", "w4f16", "--ctx", "256", "-q"});
    ASSERT_EQ(made.exit_code, 0) << made.err;
  }
  static std::string Compiled() { return dir_ + "/demo-w4f16.gguf"; }
  static inline std::string dir_;
};

double Perplexity(const std::string& file, const std::string& backend) {
  const auto run = RunKite({"eval", "ppl", "-m", file, "-f", SourcePath("models/demo/heldout.txt"),
                            "--chunks", "2", "--backend", backend, "--json"});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  return run.exit_code == 0 ? nlohmann::json::parse(run.out).at("ppl").get<double>() : NAN;
}

TEST_F(NpusimFp16ModelTest, EveryNodeRunsOnNpusimWithinATenthOfAPercentOfCpu) {
  const auto placement = RunKite({"inspect", Compiled(), "--placement", "--backend", "npusim,cpu"});
  ASSERT_EQ(placement.exit_code, 0) << placement.err;
  EXPECT_NE(placement.out.find("decode (1 token): 93 nodes on npusim, 1 partition(s)"),
            std::string::npos)
      << placement.out;
  EXPECT_NE(placement.out.find("prefill (128 tokens): 93 nodes on npusim, 1 partition(s)"),
            std::string::npos)
      << placement.out;
  const double npusim = Perplexity(Compiled(), "npusim");
  const double cpu = Perplexity(Compiled(), "cpu");
  std::printf("kite eval ppl, demo w4f16 (2 windows of 256): npusim %.4f, cpu %.4f (%+.4f%%)\n",
              npusim, cpu, 100.0 * (npusim / cpu - 1.0));
  EXPECT_LT(std::abs(npusim / cpu - 1.0), 0.001);
}

TEST_F(NpusimFp16ModelTest, AChipWithoutFp16RefusesTheRecipeAndDeclinesFloatNodes) {
  const auto refused = RunKite({"compile", SourcePath("models/demo"), "-o", dir_ + "/888.gguf",
                                "--chip", "888", "--recipe", "w4f16", "-q"});
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE(refused.err.find("recipe w4f16 needs FP16 (float activations on the NPU), which 888 "
                             "(v68) lacks"),
            std::string::npos)
      << refused.err;
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/888.gguf"));
  // The same weights without `kite compile`'s chip check: npusim on the 888 declines every float
  // node with the chip rules' reason, and the CPU runs them.
  const std::string file = dir_ + "/demo-int4.gguf";
  ASSERT_EQ(RunKite({"quantize", SourcePath("models/demo"), "-o", file, "--type", "int4", "-q"})
                .exit_code,
            0);
  for (const std::string chip : {"888", "8gen3"}) {
    SCOPED_TRACE(chip);
    EngineOptions options;
    options.backend = "npusim,cpu";
    options.chip = chip;
    options.threads = 2;
    auto engine = Engine::Load(file, options);
    ASSERT_TRUE(engine.has_value()) << engine.error().message;
    const std::string report = (*engine)->PlacementReport();
    if (chip == "888") {
      EXPECT_NE(report.find("npusim: matmul: fp16 activations need FP16, which 888 (v68) lacks"),
                std::string::npos)
          << report;
      EXPECT_NE(report.find("npusim: embedding: fp16 output 'token_embd' needs FP16"),
                std::string::npos)
          << report;
      EXPECT_NE(report.find("npusim: rope: fp16 activations need FP16"), std::string::npos);
    } else {  // nothing declined by npusim
      EXPECT_EQ(report.find("npusim:"), std::string::npos) << report;
      EXPECT_NE(report.find("swiglu     blk.0.ffn_swiglu     npusim"), std::string::npos)
          << report;
    }
  }
}

}  // namespace
}  // namespace kite
