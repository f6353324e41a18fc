#include "profile/profile.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "base/json_util.h"
#include "profile/report.h"
#include "profile/shape_only_model.h"

namespace kite {
namespace {

const std::string kChips = std::string(KITE_SOURCE_DIR) + "/chips";

TEST(ChipTest, EveryChipFileLoads) {
  auto names = ListChips(kChips);
  ASSERT_TRUE(names.has_value()) << names.error().message;
  // The issue's eight targets.
  EXPECT_EQ(*names, (std::vector<std::string>{"888", "8elite", "8elite-gen5", "8gen1", "8gen2",
                                              "8gen3", "sa8295p", "x-elite"}));
  for (const std::string& name : *names) {
    auto chip = LoadChip(kChips, name);
    ASSERT_TRUE(chip.has_value()) << chip.error().message;
    EXPECT_GT(chip->cost.hmx_macs_per_s, 0) << name;
    EXPECT_FALSE(chip->hexagon.empty()) << name;
  }
}

TEST(ChipTest, UnknownChipListsTheChips) {
  auto chip = LoadChip(kChips, "9gen9");
  ASSERT_FALSE(chip.has_value());
  EXPECT_EQ(chip.error().code, ErrorCode::kNotFound);
  EXPECT_NE(chip.error().message.find("888, 8elite, 8elite-gen5"), std::string::npos)
      << chip.error().message;
}

TEST(ChipTest, BadFieldsAreNamed) {
  auto chip = ParseChip(R"({"name": "x", "marketing": "X", "soc": "S", "hexagon": "v1",
      "vtcm_mb": "eight"})", "x.json");
  ASSERT_FALSE(chip.has_value());
  EXPECT_EQ(chip.error().message, "x.json: vtcm_mb is string, expected a number");
  // The features (the backends layer's reader) come first, then the pricing fields.
  auto missing = ParseChip(R"({"name": "x"})", "x.json");
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().message, "x.json: no field hexagon");
  auto unpriced = ParseChip(R"({"name": "x", "hexagon": "v1", "vtcm_mb": 8, "hvx_contexts": 4,
      "features": {"act16": true, "lpbq": true, "fp16": true}})",
                            "x.json");
  ASSERT_FALSE(unpriced.has_value());
  EXPECT_EQ(unpriced.error().message, "x.json: no field marketing");
  EXPECT_FALSE(ParseChip("[1]", "x.json").has_value());
  // A count that is no whole number in range is refused, not cast.
  auto huge = ParseChip(R"({"name": "x", "marketing": "X", "soc": "S", "hexagon": "v1",
      "vtcm_mb": 8, "hvx_contexts": 1e300})", "x.json");
  ASSERT_FALSE(huge.has_value());
  EXPECT_NE(huge.error().message.find("hvx_contexts"), std::string::npos) << huge.error().message;
}

// tools/fit_cost_model.py implements the formulas a second time; its predictions for every
// calibration row, with the fitted chip files, must be what the C++ computes on the real graph.
TEST(ProfileTest, CppCostModelAgreesWithTheFitScript) {
  std::ifstream in(std::string(KITE_SOURCE_DIR) + "/testdata/cost_model/fit_predictions.json");
  std::stringstream text;
  text << in.rdbuf();
  auto json = ParseJson(text.str(), "fit_predictions.json");
  ASSERT_TRUE(json.has_value()) << json.error().message;
  int rows = 0;
  for (const nlohmann::json& row : (*json)["rows"]) {
    const std::string model_name = row["model"];
    auto config = ProfileModelConfig(model_name);
    ASSERT_TRUE(config.has_value()) << config.error().message;
    auto chip = LoadChip(kChips, row["chip"]);
    ASSERT_TRUE(chip.has_value()) << chip.error().message;
    auto model = ShapeOnlyModel(*config);
    ASSERT_TRUE(model.has_value()) << model.error().message;
    auto graph = (*model)->BuildGraph({.tokens = row["tokens"].get<int32_t>()});
    ASSERT_TRUE(graph.has_value()) << graph.error().message;
    auto cost = CostGraph(*graph, *chip, *FindRecipe(row["recipe"]), row["ctx"].get<int32_t>());
    ASSERT_TRUE(cost.has_value()) << cost.error().message;
    const double expected = row["predicted_s"];
    EXPECT_NEAR(cost->total_s / expected, 1.0, 2e-4) << row.dump();
    ++rows;
  }
  EXPECT_EQ(rows, 51);
}

ProfileResult Llama8bOn8Gen3() {
  auto config = ProfileModelConfig("llama-3-8b");
  EXPECT_TRUE(config.has_value()) << config.error().message;
  auto chip = LoadChip(kChips, "8gen3");
  EXPECT_TRUE(chip.has_value()) << chip.error().message;
  auto result = ProfileModel(*config, *chip, *FindRecipe("w4a16"), ProfileOptions{});
  EXPECT_TRUE(result.has_value()) << result.error().message;
  return std::move(*result);
}

TEST(ProfileTest, SummaryOfLlama3_8bOn8Gen3) {
  const ProfileResult r = Llama8bOn8Gen3();
  // One chunk of 128 for a 128-token prompt.
  EXPECT_DOUBLE_EQ(r.ttft_s, r.prefill.total_s);
  EXPECT_DOUBLE_EQ(r.prefill_tps, 128 / r.ttft_s);
  EXPECT_DOUBLE_EQ(r.decode_tps, 1 / r.decode.total_s);
  // 32 blocks of 15 ops, the final norm and lm_head on the NPU; the embedding on the CPU.
  EXPECT_EQ(r.decode.npu_ops, 32 * 15 + 2);
  EXPECT_EQ(r.decode.cpu_ops, 1);
  // KV: 2 x 32 layers x 4096 positions x 8 heads x 128 x 2 bytes = 512 MiB.
  EXPECT_DOUBLE_EQ(r.kv_bytes, 2.0 * 32 * 4096 * 8 * 128 * 2);
  // Weights: 4-bit codes of ~7.5 G matmul weights plus the embedding table: 3.5-4.5 GB.
  EXPECT_GT(r.weight_bytes, 3.5e9);
  EXPECT_LT(r.weight_bytes, 4.5e9);
}

// sa8295p (v68, no 16-bit products): with w8a16 each block's attention runs on the CPU, and the
// values crossing get convert ops priced on the NPU: q, k and v to the CPU, the output back.
TEST(ProfileTest, FallbackOpsAndTheirConvertsAreCounted) {
  auto config = ProfileModelConfig("llama-3.2-1b");
  ASSERT_TRUE(config.has_value());
  const int32_t layers = config->n_layers;
  auto chip = LoadChip(kChips, "sa8295p");
  ASSERT_TRUE(chip.has_value());
  auto r = ProfileModel(*config, *chip, *FindRecipe("w8a16"), ProfileOptions{});
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(r->decode.cpu_ops, layers + 1);  // the attentions and the embedding
  EXPECT_EQ(r->decode.converts, 4 * layers);
  EXPECT_EQ(r->decode.npu_ops, layers * 14 + 2 + 4 * layers);
  double converts_s = 0;
  for (const OpCost& op : r->decode.ops) {
    if (op.op != "convert") continue;
    EXPECT_EQ(op.unit, ComputeUnit::kNpu);
    // Its bytes over the bandwidth, overlapped with the per-op overhead.
    EXPECT_GT(op.bytes, 0) << op.node;
    EXPECT_DOUBLE_EQ(op.time_s, std::max(op.overhead_s, op.memory_s)) << op.node;
    EXPECT_DOUBLE_EQ(op.overhead_s, chip->cost.op_overhead_us * 1e-6) << op.node;
    converts_s += op.time_s;
  }
  EXPECT_GT(converts_s, 0);
  // q of one token: n_heads × head_dim 16-bit codes read, as many floats written.
  for (const OpCost& op : r->decode.ops) {
    if (op.node == "blk.0.rope_q.to_cpu") {
      EXPECT_DOUBLE_EQ(op.bytes, config->n_heads * config->head_dim * (2.0 + 4.0));
    }
  }
  // The convert of blk.0's q comes right after the rope that wrote it.
  bool found = false;
  for (size_t i = 0; i + 1 < r->decode.ops.size(); ++i) {
    if (r->decode.ops[i].node != "blk.0.rope_q") continue;
    found = true;
    EXPECT_EQ(r->decode.ops[i + 1].node, "blk.0.rope_q.to_cpu");
    EXPECT_EQ(r->decode.ops[i + 1].placement, "dequantize for blk.0.attn on the CPU");
  }
  EXPECT_TRUE(found);
  // With 8-bit activations attention stays on the NPU: no converts.
  auto a8 = ProfileModel(*config, *chip, *FindRecipe("w8a8"), ProfileOptions{});
  ASSERT_TRUE(a8.has_value());
  EXPECT_EQ(a8->decode.cpu_ops, 1);
  EXPECT_EQ(a8->decode.converts, 0);
  // With fp16 activations the ropes are decomposed and stay on the NPU, the reason shown.
  auto fp16 =
      ProfileModel(*config, *LoadChip(kChips, "8gen3"), *FindRecipe("w4f16"), ProfileOptions{});
  ASSERT_TRUE(fp16.has_value());
  int decomposed = 0;
  for (const OpCost& op : fp16->decode.ops) {
    if (op.op == "rope") {
      EXPECT_EQ(op.unit, ComputeUnit::kNpu);
      decomposed += op.placement.find("decomposed") != std::string::npos;
    }
  }
  EXPECT_EQ(decomposed, 2 * layers);
  EXPECT_EQ(ProfileJson(*r)["decode"]["converts"], 4 * layers);
}

TEST(ProfileTest, PromptLongerThanTheContextIsRefused) {
  auto config = ProfileModelConfig("llama-3.2-1b");
  ASSERT_TRUE(config.has_value());
  auto chip = LoadChip(kChips, "8elite");
  ASSERT_TRUE(chip.has_value());
  ProfileOptions options;
  options.prompt = 5000;
  auto result = ProfileModel(*config, *chip, *FindRecipe("w4a16"), options);
  ASSERT_FALSE(result.has_value());
  EXPECT_NE(result.error().message.find("5000"), std::string::npos);
  auto missing = ProfileModelConfig("no-such-model");
  ASSERT_FALSE(missing.has_value());
  EXPECT_NE(missing.error().message.find("llama-3-8b"), std::string::npos);
}

TEST(ProfileTest, JsonSchema) {
  const ProfileResult r = Llama8bOn8Gen3();
  const nlohmann::json j = ProfileJson(r);
  for (const char* key : {"model", "chip", "recipe", "options", "summary", "prefill", "decode"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  for (const char* key : {"ttft_ms", "prefill_tokens_per_s", "decode_tokens_per_s",
                          "peak_memory_bytes", "npu_ops", "cpu_ops"}) {
    EXPECT_TRUE(j["summary"][key].is_number()) << key;
  }
  EXPECT_EQ(j["recipe"], "w4a16");
  EXPECT_EQ(j["chip"]["name"], "8gen3");
  const nlohmann::json& ops = j["decode"]["ops"];
  ASSERT_EQ(ops.size(), r.decode.ops.size());
  for (const nlohmann::json& op : ops) {
    for (const char* key : {"node", "op", "unit", "shape", "bound"}) {
      ASSERT_TRUE(op[key].is_string()) << key << " in " << op.dump();
    }
    for (const char* key : {"bytes", "macs", "time_us", "compute_us", "memory_us", "overhead_us",
                            "layer"}) {
      ASSERT_TRUE(op[key].is_number()) << key << " in " << op.dump();
    }
    const std::string bound = op["bound"];
    EXPECT_TRUE(bound == "compute" || bound == "bandwidth" || bound == "overhead") << bound;
  }
  EXPECT_EQ(ops[0]["unit"], "CPU");
  EXPECT_TRUE(ops[0]["placement"].is_string());
}

TEST(ProfileTest, TraceHasOneEventPerOpInOrder) {
  const ProfileResult r = Llama8bOn8Gen3();
  const nlohmann::json t = ProfileTrace(r);
  size_t complete = 0;
  double last_end = 0;
  for (const nlohmann::json& e : t["traceEvents"]) {
    if (e["ph"] != "X" || e["tid"] == 3) continue;  // metadata, the phase spans
    EXPECT_GE(e["ts"].get<double>() + 1e-9, last_end);
    last_end = e["ts"].get<double>() + e["dur"].get<double>();
    ++complete;
  }
  EXPECT_EQ(complete, r.prefill.ops.size() + r.decode.ops.size());
  EXPECT_NEAR(last_end, (r.prefill.total_s + r.decode.total_s) * 1e6, 1e-3);
}

TEST(ProfileTest, HtmlIsSelfContainedWithPlots) {
  const std::string html = ProfileHtml(Llama8bOn8Gen3());
  EXPECT_TRUE(html.starts_with("<!DOCTYPE html>"));
  EXPECT_NE(html.find("<svg"), std::string::npos);
  EXPECT_NE(html.find("time per layer"), std::string::npos);
  EXPECT_NE(html.find("NPU 482 ops, CPU 1 ops"), std::string::npos);
  // No script, no fetched resource.
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("http"), std::string::npos);
  EXPECT_TRUE(html.ends_with("</html>\n"));
}

}  // namespace
}  // namespace kite
