// `kite inspect MODEL --placement --chip NAME` on the demo model (a float Llama of 6 blocks, so
// activations count as 16-bit): per chip, which nodes run on the NPU, which on the CPU and why,
// which are decomposed, and where the converts go.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli_runner.h"

namespace kite {
namespace {

using testing::RunKite;
using testing::SourcePath;

nlohmann::json Placement(const std::string& chip) {
  const testing::CommandResult r =
      RunKite({"inspect", SourcePath("models/demo"), "--placement", "--chip", chip, "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return nlohmann::json::parse(r.out, nullptr, false);
}

const nlohmann::json& Decode(const nlohmann::json& placement) { return placement["graphs"][0]; }

TEST(NpuPlacementCli, V68RunsSixteenBitAttentionOnTheCpu) {
  const nlohmann::json p = Placement("888");
  ASSERT_FALSE(p.is_discarded());
  const nlohmann::json& decode = Decode(p);
  EXPECT_EQ(decode["phase"], "decode");
  EXPECT_TRUE(decode["decomposed"].empty());
  int attention_on_cpu = 0, rope = 0;
  for (const nlohmann::json& node : decode["nodes"]) {
    rope += node["op"] == "rope" && node["unit"] == "NPU";
    if (node["op"] != "attention") continue;
    EXPECT_EQ(node["unit"], "CPU");
    EXPECT_NE(node["reason"].get<std::string>().find("16-bit activations on both matmul inputs"),
              std::string::npos);
    ++attention_on_cpu;
  }
  EXPECT_EQ(rope, 12);  // q and k of 6 blocks: integer sin/cos tables on every chip
  EXPECT_EQ(attention_on_cpu, 6);
  EXPECT_EQ(decode["cpu"], 7);  // and the embedding
  // q, k, v to each attention on the CPU and its output back.
  EXPECT_EQ(decode["boundaries"].size(), 24u);
}

TEST(NpuPlacementCli, V75RunsEverythingButTheEmbedding) {
  const nlohmann::json p = Placement("8gen3");
  ASSERT_FALSE(p.is_discarded());
  const nlohmann::json& decode = Decode(p);
  EXPECT_EQ(decode["cpu"], 1);
  EXPECT_TRUE(decode["boundaries"].empty());
  EXPECT_TRUE(decode["decomposed"].empty());
  EXPECT_EQ(p["chip"]["hexagon"], "v75");
  ASSERT_EQ(p["graphs"].size(), 2u);
  EXPECT_EQ(p["graphs"][1]["phase"], "prefill");
}

TEST(NpuPlacementCli, UnknownChipIsRefusedListingTheChips) {
  const testing::CommandResult r =
      RunKite({"inspect", SourcePath("models/demo"), "--placement", "--chip", "9gen9"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("unknown chip '9gen9'; the chips are: 888, 8elite"), std::string::npos)
      << r.err;
  const testing::CommandResult alone =
      RunKite({"inspect", SourcePath("models/demo"), "--chip", "888"});
  EXPECT_NE(alone.exit_code, 0);
  EXPECT_NE(alone.err.find("--chip is an option of --placement"), std::string::npos) << alone.err;
}

}  // namespace
}  // namespace kite
