#include "eval/sqnr.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "eval/sqnr_plot.h"
#include "models/test_model.h"

namespace kite {
namespace {

std::unique_ptr<Engine> Load(const std::string& path) {
  EngineOptions options;
  options.context_length = 16;
  options.prefill_chunk = 16;
  auto engine = Engine::Load(path, options);
  EXPECT_TRUE(engine.has_value()) << engine.error().message;
  return engine ? std::move(*engine) : nullptr;
}

constexpr std::string_view kText = "the quick brown fox jumps over the lazy dog, twice: the quick brown fox";

// The reference has F16 weights and the "quantized" model the same weights in F32 (a small error
// everywhere), except blk.2.attn_q, of which a few elements are damaged: that tensor and its
// layer come out worst and flagged; isolated, no other tensor inherits the damage.
TEST(SqnrTest, TheDamagedLayerIsFlaggedWorst) {
  testing::TestModelOptions model;
  model.n_layers = 4;
  const std::string quant_path = ::testing::TempDir() + "kite_sqnr_quant.gguf";
  const std::string reference_path = ::testing::TempDir() + "kite_sqnr_reference.gguf";
  ASSERT_TRUE(testing::WriteTestModel(quant_path, model).has_value());
  model.dtype = DType::kF16;
  ASSERT_TRUE(testing::WriteTestModel(reference_path, model).has_value());
  for (int64_t i = 0; i < 32 * 32; i += 37) {
    ASSERT_TRUE(testing::SetTestModelValue(quant_path, "blk.2.attn_q.weight", i, 0.5f).has_value());
  }
  auto quant = Load(quant_path);
  auto reference = Load(reference_path);
  ASSERT_TRUE(quant && reference);

  SqnrOptions options;
  options.scoring = {.ctx = 16, .max_windows = 2};
  auto report = ComputeSqnr(*quant, *reference, kText, options);
  ASSERT_TRUE(report.has_value()) << report.error().message;
  EXPECT_EQ(report->windows, 2);
  EXPECT_EQ(report->tokens, 32);
  ASSERT_FALSE(report->tensors.empty());
  EXPECT_EQ(report->tensors[0].name, "blk.2.attn_q");
  EXPECT_EQ(report->tensors[0].kind, "linear");
  EXPECT_TRUE(report->tensors[0].flagged);
  for (size_t i = 1; i < report->tensors.size(); ++i) {
    EXPECT_FALSE(report->tensors[i].flagged) << report->tensors[i].name;
    EXPECT_LE(report->tensors[i - 1].sqnr_db, report->tensors[i].sqnr_db);  // worst first
    EXPECT_TRUE(std::isfinite(report->tensors[i].sqnr_db)) << report->tensors[i].name;
  }
  // blk.0..3 and the head, in order.
  ASSERT_EQ(report->layers.size(), 5u);
  for (const LayerSqnr& layer : report->layers) {
    EXPECT_EQ(layer.flagged, layer.layer == 2) << layer.layer;
    if (layer.layer != 2) {
      EXPECT_GT(layer.sqnr_db, report->layers[2].sqnr_db);
    }
  }
  EXPECT_EQ(report->layers[2].worst, "blk.2.attn_q");
  EXPECT_EQ(report->layers[4].layer, 4);  // the head: n_layers

  // Propagated, the damage reaches every later tensor: blk.3's fall below their isolated SQNR.
  options.propagate = true;
  auto propagated = ComputeSqnr(*quant, *reference, kText, options);
  ASSERT_TRUE(propagated.has_value());
  EXPECT_LT(propagated->layers[3].sqnr_db + 6.0, report->layers[3].sqnr_db);

  const std::string svg = SqnrPlotSvg(*report, "title <q4_0>");
  EXPECT_TRUE(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
  EXPECT_TRUE(svg.ends_with("</svg>\n"));
  for (const char* part : {">layer</text>", ">SQNR (dB)</text>", "title &lt;q4_0&gt;", ">head</text>", ">0</text>",
                           "<title>layer 2: "}) {
    EXPECT_NE(svg.find(part), std::string::npos) << part;
  }
  size_t red = 0;
  for (size_t at = svg.find("#d62728"); at != std::string::npos; at = svg.find("#d62728", at + 1)) ++red;
  EXPECT_EQ(red, 1u);  // layer 2's bar
}

}  // namespace
}  // namespace kite
