// Block-by-block calibration against the whole model's graph watched by a plain observer: the
// statistics of every linear input and every activation must be the same, since each block
// alone computes what it computes inside the whole graph.
#include "quant/calibrate.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "backends/ref/ref_backend.h"
#include "models/load_model.h"
#include "models/test_model.h"
#include "runtime/model_files.h"
#include "runtime/testing.h"

namespace kite {
namespace {

std::unique_ptr<Model> TestModel(const std::string& name, testing::TestModelOptions options = {}) {
  const std::string path = ::testing::TempDir() + name;
  EXPECT_TRUE(testing::WriteTestModel(path, options).has_value());
  auto loaded = LoadGgufModel(path);
  EXPECT_TRUE(loaded.has_value()) << loaded.error().message;
  return loaded ? std::move(*loaded) : nullptr;
}

// The whole graph's statistics, gathered the plain way: each matmul's x as the node before it
// left it, each weight on its own.
class WholeGraphObserver final : public Observer {
 public:
  explicit WholeGraphObserver(CalibrationStats* stats) : stats_(stats) {}
  Status AfterNode(const Executable& executable, int32_t node, const TensorArg& output) override {
    const Graph& graph = executable.graph();
    const Node& n = graph.nodes()[node];
    const float* data = output.as<const float>();
    const int64_t count = output.elements();
    AccumulateActivation({data, static_cast<size_t>(count)}, 64, stats_->activations[n.name]);
    for (const Node& reader : graph.nodes()) {
      if (reader.op() != OpKind::kMatMul) continue;
      const Value& x = graph.value(reader.inputs[0]);
      if (graph.memory_of(x).producer != node) continue;
      const int64_t columns = x.shape.back();
      AccumulateLinearInput(data, count / columns, columns, /*gram=*/true, /*max_samples=*/5,
                            /*sample_stride=*/2,
                            stats_->linears[graph.value(reader.inputs[1]).name]);
    }
    return Ok();
  }

 private:
  CalibrationStats* stats_;
};

const std::vector<std::vector<int32_t>> kWindows = {{1, 17, 260, 3, 99, 42, 7}, {1, 250, 8, 9, 31}};

TEST(CalibrateTest, BlockwiseStatsEqualTheWholeGraphs) {
  std::unique_ptr<Model> model = TestModel("kite_calibrate_whole.gguf");
  ASSERT_NE(model, nullptr);

  CalibrationStats whole;
  RefBackend ref;
  std::vector<Backend*> backends = {&ref};
  WholeGraphObserver observer(&whole);
  for (const std::vector<int32_t>& window : kWindows) {
    const int32_t T = static_cast<int32_t>(window.size());
    auto graph = model->BuildGraph({.tokens = T, .all_logits = true});
    ASSERT_TRUE(graph.has_value()) << graph.error().message;
    auto executable = Executable::Compile(std::move(*graph), backends);
    ASSERT_TRUE(executable.has_value()) << executable.error().message;
    auto state = (*executable)->NewRunState();
    ASSERT_TRUE(state.has_value());
    std::vector<int32_t> positions(T);
    for (int32_t t = 0; t < T; ++t) positions[t] = t;
    ASSERT_TRUE((*state)->SetInput("tokens", window).has_value());
    ASSERT_TRUE((*state)->SetInput("positions", positions).has_value());
    const KvLayout kv = model->kv_layout();
    auto cache = testing::KvCache::Create({.n_layers = kv.n_layers,
                                           .n_kv_heads = kv.n_kv_heads,
                                           .head_dim = kv.head_dim,
                                           .page_size = 16,
                                           .n_pages = kv.n_layers,
                                           .dtype = DType::kF32});
    ASSERT_TRUE(cache.has_value());
    ASSERT_TRUE(cache->Resize(T).has_value());
    const KvCacheView view = cache->view();
    const Status ran = (*executable)->Run(**state, {.kv_cache = &view, .observer = &observer});
    ASSERT_TRUE(ran.has_value()) << ran.error().message;
  }
  for (auto& [name, linear] : whole.linears) FinishGram(linear);

  auto blockwise = CollectCalibrationStats(
      *model, kWindows,
      {.gram = true, .max_samples = 5, .activations = true, .hist_bins = 64, .backend = "ref"});
  ASSERT_TRUE(blockwise.has_value()) << blockwise.error().message;
  EXPECT_EQ(blockwise->tokens, 12);

  ASSERT_EQ(blockwise->linears.size(), whole.linears.size());
  EXPECT_EQ(whole.linears.size(), 2u * 7u + 1u);
  for (const auto& [name, expected] : whole.linears) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(blockwise->linears.contains(name));
    const LinearInputStats& got = blockwise->linears.at(name);
    EXPECT_EQ(got.columns, expected.columns);
    EXPECT_EQ(got.rows_seen, 12);
    EXPECT_EQ(got.sum_sq, expected.sum_sq);
    EXPECT_EQ(got.abs_sum, expected.abs_sum);
    EXPECT_EQ(got.abs_max, expected.abs_max);
    EXPECT_EQ(got.samples_rows, 5);  // rows 0, 2, 4, 6, 8 of 12 (stride 12 / 5 = 2)
    EXPECT_EQ(got.samples, expected.samples);
    EXPECT_EQ(got.gram, expected.gram);
  }
  // Every node output but the views is there, with the embedding's under its node's name.
  ASSERT_EQ(blockwise->activations.size(), whole.activations.size());
  EXPECT_TRUE(blockwise->activations.contains("token_embd"));
  EXPECT_TRUE(blockwise->activations.contains("output"));
  for (const auto& [name, expected] : whole.activations) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(blockwise->activations.contains(name));
    const ActivationStats& got = blockwise->activations.at(name);
    EXPECT_EQ(got.count, expected.count);
    EXPECT_EQ(got.min, expected.min);
    EXPECT_EQ(got.max, expected.max);
    EXPECT_EQ(got.hist_lo, expected.hist_lo);
    EXPECT_EQ(got.hist_hi, expected.hist_hi);
    EXPECT_EQ(got.hist, expected.hist);
  }
}

TEST(CalibrateTest, TheHeadComesLastAndTheCpuAgreesWithRef) {
  std::unique_ptr<Model> model = TestModel("kite_calibrate_head.gguf");
  ASSERT_NE(model, nullptr);
  std::vector<int32_t> layers;
  auto on_layer = [&](int32_t layer, CalibrationStats& stats) -> Result<WeightReplacements> {
    layers.push_back(layer);
    if (layer == 2) {
      EXPECT_EQ(stats.linears.size(), 1u);
      EXPECT_TRUE(stats.linears.contains("output.weight"));
      EXPECT_TRUE(stats.activations.empty());  // no activations asked for: no lm_head run
    }
    return WeightReplacements{};
  };
  ASSERT_TRUE(CalibrateBlockwise(*model, kWindows, {}, on_layer).has_value());
  EXPECT_EQ(layers, (std::vector<int32_t>{0, 1, 2}));

  auto ref = CollectCalibrationStats(*model, kWindows, {.backend = "ref"});
  auto cpu = CollectCalibrationStats(*model, kWindows, {.backend = "cpu"});
  ASSERT_TRUE(ref.has_value() && cpu.has_value());
  for (const auto& [name, expected] : ref->linears) {
    const LinearInputStats& got = cpu->linears.at(name);
    for (int64_t j = 0; j < expected.columns; ++j) {
      EXPECT_NEAR(got.sum_sq[j], expected.sum_sq[j], 1e-4 * (1 + expected.sum_sq[j]))
          << name << " column " << j;
    }
  }
}

// Zero output projections in block 0 make block 1's input the embedding itself, so its q input
// is rms_norm(embedding) · attn_norm, computed here by hand.
TEST(CalibrateTest, ReplacementWeightsFeedTheNextBlock) {
  std::unique_ptr<Model> model = TestModel("kite_calibrate_replace.gguf");
  ASSERT_NE(model, nullptr);
  const ModelConfig& config = model->config();
  std::vector<double> got;
  auto on_layer = [&](int32_t layer, CalibrationStats& stats) -> Result<WeightReplacements> {
    if (layer == 1) got = stats.linears.at("blk.1.attn_q.weight").sum_sq;
    if (layer != 0) return WeightReplacements{};
    WeightReplacements zeros;
    zeros["blk.0.attn_output.weight"].assign(size_t{32} * 32, 0.0f);
    zeros["blk.0.ffn_down.weight"].assign(size_t{32} * 48, 0.0f);
    return zeros;
  };
  ASSERT_TRUE(CalibrateBlockwise(*model, kWindows, {.backend = "ref"}, on_layer).has_value());

  const float* embedding = static_cast<const float*>((*model->Weight("token_embd.weight"))->data);
  const float* norm = static_cast<const float*>((*model->Weight("blk.1.attn_norm.weight"))->data);
  std::vector<double> expected(config.hidden, 0.0);
  for (const auto& window : kWindows) {
    for (int32_t token : window) {
      const float* row = embedding + token * config.hidden;
      double square = 0;
      for (int32_t i = 0; i < config.hidden; ++i) square += double{row[i]} * row[i];
      const double scale = 1.0 / std::sqrt(square / config.hidden + config.rms_eps);
      for (int32_t i = 0; i < config.hidden; ++i) {
        const double h = row[i] * scale * norm[i];
        expected[i] += h * h;
      }
    }
  }
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], expected[i], 1e-4 * (1 + expected[i])) << "column " << i;
  }

  auto unknown = [](int32_t layer, CalibrationStats&) -> Result<WeightReplacements> {
    WeightReplacements bad;
    if (layer == 0) bad["blk.1.attn_q.weight"].assign(size_t{32} * 32, 0.0f);
    return bad;
  };
  const Status refused = CalibrateBlockwise(*model, kWindows, {.backend = "ref"}, unknown);
  ASSERT_FALSE(refused.has_value());
  EXPECT_NE(refused.error().message.find("blk.1.attn_q.weight is not read by block 0"),
            std::string::npos)
      << refused.error().message;
}

TEST(CalibrateTest, HistogramsWidenWithoutLosingCounts) {
  ActivationStats stats;
  AccumulateActivation(std::vector<float>{0.0f, 1.0f, 0.5f}, 8, stats);
  AccumulateActivation(std::vector<float>{-3.0f, 10.0f}, 8, stats);
  AccumulateActivation(std::vector<float>{2.0f, 2.0f}, 8, stats);
  EXPECT_EQ(stats.count, 7);
  EXPECT_EQ(stats.min, -3.0f);
  EXPECT_EQ(stats.max, 10.0f);
  EXPECT_LE(stats.hist_lo, -3.0f);
  EXPECT_GE(stats.hist_hi, 10.0f);
  uint64_t total = 0;
  for (uint64_t c : stats.hist) total += c;
  EXPECT_EQ(total, 7u);
  // The top bin holds 10, the bottom one -3.
  EXPECT_EQ(stats.hist.front(), 1u);
  EXPECT_GE(stats.hist.back() + stats.hist[stats.hist.size() - 2], 1u);
}

TEST(CalibrateTest, WindowsFromTextAndTooShortATextIsAnError) {
  const std::string path = ::testing::TempDir() + "kite_calibrate_text.gguf";
  ASSERT_TRUE(testing::WriteTestModel(path, {}).has_value());
  auto files = LoadModelFiles(path);
  ASSERT_TRUE(files.has_value()) << files.error().message;
  const Tokenizer& tokenizer = *files->tokenizer;
  const std::string text(100, 'a');  // byte tokens: about one token per byte
  auto ids = tokenizer.Encode(text, false);
  ASSERT_TRUE(ids.has_value());
  const int64_t available = static_cast<int64_t>(ids->size());

  auto windows = CalibrationWindows(tokenizer, text, "a.txt", {.tokens = 20, .window = 8});
  ASSERT_TRUE(windows.has_value()) << windows.error().message;
  ASSERT_EQ(windows->size(), 3u);  // 8 + 8 + 4
  EXPECT_EQ((*windows)[2].size(), 4u);
  const bool bos = tokenizer.Summary().add_bos;
  for (const auto& window : *windows) {
    if (bos) {
      EXPECT_EQ(window.front(), tokenizer.bos_id());
    }
  }
  // The text's tokens in order, after each window's BOS.
  EXPECT_EQ((*windows)[0][bos ? 1 : 0], (*ids)[0]);

  auto short_text = CalibrationWindows(tokenizer, text, "a.txt", {.tokens = 1000, .window = 8});
  ASSERT_FALSE(short_text.has_value());
  EXPECT_NE(short_text.error().message.find("a.txt is too short: it has " +
                                            std::to_string(available) + " tokens"),
            std::string::npos)
      << short_text.error().message;
}

TEST(CalibrateTest, ChatWindowsAreConversationsOfTheTemplate) {
  const std::string path = ::testing::TempDir() + "kite_calibrate_chat.gguf";
  ASSERT_TRUE(testing::WriteTestModel(path, {}).has_value());
  auto files = LoadModelFiles(path);
  ASSERT_TRUE(files.has_value()) << files.error().message;
  const Tokenizer& tokenizer = *files->tokenizer;
  std::string text;
  for (int i = 0; i < 40; ++i) text += "line " + std::to_string(i) + "\n\n";
  const CalibrationTextOptions options{
      .tokens = 300, .window = 128, .chat = true, .chat_template = "chatml"};
  auto windows = CalibrationWindows(tokenizer, text, "lines.txt", options);
  ASSERT_TRUE(windows.has_value()) << windows.error().message;
  ASSERT_EQ(windows->size(), 3u);  // 128 + 128 + 44
  EXPECT_EQ((*windows)[2].size(), 44u);
  // The test vocabulary spells spaces as U+2581 ("▁").
  auto text_of = [&](const std::vector<int32_t>& ids) {
    std::string decoded = tokenizer.Decode(ids).value_or("");
    std::string plain;
    for (size_t i = 0; i < decoded.size(); ++i) {
      if (decoded.compare(i, 3, "\xe2\x96\x81") == 0) {
        if (i > 0) plain += ' ';
        i += 2;
      } else {
        plain += decoded[i];
      }
    }
    return plain;
  };
  const std::string first = text_of((*windows)[0]), second = text_of((*windows)[1]);

  // Each window is a conversation of its own, from a later line of the text.
  EXPECT_TRUE(
      first.starts_with("<|im_start|>user\nline 0<|im_end|>\n<|im_start|>assistant\n"
                        "line 1 line 2 line 3<|im_end|>"))
      << first;
  EXPECT_TRUE(second.starts_with("<|im_start|>user\nline ")) << second;
  EXPECT_EQ(second.find("line 0<"), std::string::npos) << second;

  auto short_text = CalibrationWindows(tokenizer, "one line\n", "lines.txt",
                                       {.tokens = 150, .chat = true, .chat_template = "chatml"});
  ASSERT_FALSE(short_text.has_value());
  EXPECT_NE(short_text.error().message.find("lines.txt is too short"), std::string::npos)
      << short_text.error().message;
}

}  // namespace
}  // namespace kite
