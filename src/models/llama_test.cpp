#include <gtest/gtest.h>

#include <map>
#include <string>

#include "models/load_model.h"
#include "models/test_model.h"

namespace kite {
namespace {

// nullptr (and a test failure) when the model does not load.
std::unique_ptr<Model> LoadTestModel(const testing::TestModelOptions& options,
                                     const std::string& name) {
  const std::string path = ::testing::TempDir() + "kite_llama_graph_" + name + ".gguf";
  EXPECT_TRUE(testing::WriteTestModel(path, options).has_value());
  auto model = LoadGgufModel(path);
  EXPECT_TRUE(model.has_value()) << model.error().message;
  return model ? std::move(*model) : nullptr;
}

std::map<std::string, int> CountOps(const Graph& graph) {
  std::map<std::string, int> counts;
  for (const Node& node : graph.nodes()) ++counts[std::string(node.op_name())];
  return counts;
}

TEST(LlamaGraphTest, PrefillGraphHasTheDecoderOps) {
  // 2 layers, 4 heads (2 kv) of 8, vocab 300
  std::unique_ptr<Model> model = LoadTestModel({}, "plain");
  ASSERT_NE(model, nullptr);
  auto graph = model->BuildGraph({.tokens = 5, .all_logits = true});
  ASSERT_TRUE(graph.has_value()) << graph.error().message;
  const auto ops = CountOps(*graph);
  EXPECT_EQ(ops.at("embedding"), 1);
  EXPECT_EQ(ops.at("rms_norm"), 2 * 2 + 1);
  EXPECT_EQ(ops.at("matmul"), 2 * 7 + 1);  // q, k, v, o, gate, up, down; lm_head
  EXPECT_EQ(ops.at("rope"), 2 * 2);
  EXPECT_EQ(ops.at("attention"), 2);
  EXPECT_EQ(ops.at("swiglu"), 2);
  EXPECT_EQ(ops.at("add"), 2 * 2);
  EXPECT_EQ(ops.at("reshape"), 2 * 4);
  EXPECT_FALSE(ops.contains("slice"));

  ASSERT_EQ(graph->inputs().size(), 2u);
  EXPECT_EQ(graph->value(graph->inputs()[0]).name, "tokens");
  EXPECT_EQ(graph->value(graph->inputs()[1]).name, "positions");
  EXPECT_EQ(graph->value(graph->inputs()[1]).shape, std::vector<int64_t>{5});
  ASSERT_EQ(graph->outputs().size(), 1u);
  EXPECT_EQ(graph->value(graph->outputs()[0]).shape, (std::vector<int64_t>{5, 300}));

  for (const Node& node : graph->nodes()) {
    if (node.op() == OpKind::kRope) {
      EXPECT_EQ(node.as<RopeAttrs>().mode, RopeMode::kInterleaved) << node.name;  // GGUF llama
      EXPECT_EQ(node.as<RopeAttrs>().rotary_dim, 8);
    }
    if (node.op() == OpKind::kAttention) {
      EXPECT_FLOAT_EQ(node.as<AttentionAttrs>().scale, 1.0f / std::sqrt(8.0f));
      EXPECT_EQ(node.as<AttentionAttrs>().layer, node.name == "blk.0.attn" ? 0 : 1) << node.name;
    }
  }
}

TEST(LlamaGraphTest, GenerationComputesOnlyTheLastRowOfLogits) {
  std::unique_ptr<Model> model = LoadTestModel({}, "last");
  ASSERT_NE(model, nullptr);
  auto graph = model->BuildGraph({.tokens = 7, .all_logits = false});
  ASSERT_TRUE(graph.has_value()) << graph.error().message;
  EXPECT_EQ(CountOps(*graph).at("slice"), 1);
  EXPECT_EQ(graph->value(graph->outputs()[0]).shape, (std::vector<int64_t>{1, 300}));

  auto decode = model->BuildGraph({.tokens = 1});
  ASSERT_TRUE(decode.has_value()) << decode.error().message;
  EXPECT_FALSE(CountOps(*decode).contains("slice"));  // one row already
  EXPECT_EQ(decode->value(decode->outputs()[0]).shape, (std::vector<int64_t>{1, 300}));
}

TEST(LlamaGraphTest, TiedEmbeddingsShareOneWeight) {
  testing::TestModelOptions options;
  options.tied = true;
  options.qkv_bias = true;
  std::unique_ptr<Model> model = LoadTestModel(options, "tied");
  ASSERT_NE(model, nullptr);
  auto graph = model->BuildGraph({.tokens = 2, .all_logits = true});
  ASSERT_TRUE(graph.has_value()) << graph.error().message;
  const Node& embedding = graph->nodes().front();
  const Node& lm_head = graph->nodes().back();
  ASSERT_EQ(lm_head.op(), OpKind::kMatMul);
  EXPECT_EQ(lm_head.inputs[1], embedding.inputs[0]);
  int biased = 0;
  for (const Node& node : graph->nodes())
    biased += node.op() == OpKind::kMatMul && node.inputs.size() == 3;
  EXPECT_EQ(biased, 2 * 3);  // q, k, v per layer
}

TEST(LlamaGraphTest, RefusesAnEmptyPhaseAndUnknownFamily) {
  std::unique_ptr<Model> model = LoadTestModel({}, "refuse");
  ASSERT_NE(model, nullptr);
  EXPECT_FALSE(model->BuildGraph({.tokens = 0}).has_value());
  ModelConfig config = model->config();
  config.family = "mamba";
  auto architecture = FindArchitecture(config);
  ASSERT_FALSE(architecture.has_value());
  EXPECT_EQ(architecture.error().code, ErrorCode::kUnsupported);
}

}  // namespace
}  // namespace kite
