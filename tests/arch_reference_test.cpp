// Qwen3, Gemma 2, Gemma 3, Phi-3 (LongRoPE) and a Mistral whose sliding window is shorter than
// the test sequences, against their PyTorch references (tools/make_arch_references.py, run here
// once: the weights are made at test time, not committed): from the HF folder and from the GGUF
// `kite convert` writes of it, on the ref and cpu backends, the prefill logits at every
// position, a token-by-token decode through the KV cache (the window applied to cached
// positions), and greedy generation. Phi-3 also with a context of 32, inside its original
// LongRoPE context (short factors; the default context of 128 takes the long ones).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "arch_references.h"
#include "reference_golden.h"
#include "runtime/engine.h"
#include "runtime/session.h"

namespace kite {
namespace {

using testing::ExpectRow;
using testing::Golden;
using testing::kTieMargin;

struct Case {
  std::string model;
  bool gguf;
  std::string backend;
};
std::string CaseName(const ::testing::TestParamInfo<Case>& info) {
  std::string name = info.param.model + (info.param.gguf ? "_gguf_" : "_hf_") + info.param.backend;
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
}

class ArchReferenceTest : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    std::string why;
    dir_ = testing::ArchReferenceDir(&why);
    if (dir_.empty()) GTEST_SKIP() << why;
  }

  std::string Folder() const { return dir_ + "/" + GetParam().model; }

  std::unique_ptr<Engine> Load(int32_t context = 0) const {
    EngineOptions options;
    options.backend = GetParam().backend;
    options.kv_dtype = DType::kF32;  // the goldens are float compute
    options.kv_page_size = 4;        // the window crosses page boundaries
    options.context_length = context;
    options.threads = 2;
    const std::string path =
        GetParam().gguf ? testing::ConvertedArchReference(dir_, GetParam().model) : Folder();
    auto engine = Engine::Load(path, options);
    EXPECT_TRUE(engine.has_value()) << engine.error().message;
    return engine ? std::move(*engine) : nullptr;
  }

  Golden LoadGolden(const std::string& file = "golden.json") const {
    return testing::LoadGoldenFile(Folder() + "/" + file);
  }

  std::string dir_;
};

void ExpectPrefill(Engine& engine, const Golden& g) {
  Session session(engine);
  auto logits = session.Feed(g.input_ids, /*all_logits=*/true);
  ASSERT_TRUE(logits.has_value()) << logits.error().message;
  const size_t vocab = engine.config().vocab;
  ASSERT_EQ(logits->size(), g.input_ids.size() * vocab);
  for (size_t p = 0; p < g.input_ids.size(); ++p) {
    ExpectRow(logits->subspan(p * vocab, vocab), g.positions[p], "position " + std::to_string(p));
  }
}

void ExpectGreedy(Engine& engine, const Golden& g) {
  Session session(engine);
  Session::GenerateOptions options;
  options.max_tokens = static_cast<int32_t>(g.new_tokens.size());
  options.sampler.temperature = 0.0f;
  auto result = session.Generate(g.input_ids, options);
  ASSERT_TRUE(result.has_value()) << result.error().message;
  ASSERT_EQ(result->ids.size(), g.new_tokens.size());
  for (size_t i = 0; i < g.new_tokens.size(); ++i) {
    ASSERT_EQ(result->ids[i], g.new_tokens[i]) << "step " << i;
    if (g.margins[i] < kTieMargin) break;  // a near tie may flip; what follows would differ
  }
  // The logits behind each step, by value, through the KV-cache decode loop: past the window
  // each step must leave the oldest positions out.
  session.Reset();
  auto logits = session.Feed(g.input_ids);
  for (size_t i = 0; i < g.new_tokens.size(); ++i) {
    ASSERT_TRUE(logits.has_value()) << logits.error().message;
    ExpectRow(*logits, g.steps[i], "greedy step " + std::to_string(i));
    logits = session.Feed(std::span(&g.new_tokens[i], 1));
  }
}

TEST_P(ArchReferenceTest, PrefillMatchesEveryPosition) {
  auto engine = Load();
  ASSERT_TRUE(engine);
  ExpectPrefill(*engine, LoadGolden());
}

TEST_P(ArchReferenceTest, TokenByTokenDecodeMatches) {
  auto engine = Load();
  ASSERT_TRUE(engine);
  const Golden g = LoadGolden();
  Session session(*engine);
  for (size_t p = 0; p < g.input_ids.size(); ++p) {
    auto logits = session.Feed(std::span(&g.input_ids[p], 1));
    ASSERT_TRUE(logits.has_value()) << logits.error().message;
    ExpectRow(*logits, g.positions[p], "decode step " + std::to_string(p));
  }
}

TEST_P(ArchReferenceTest, GreedyGenerationMatches) {
  auto engine = Load();
  ASSERT_TRUE(engine);
  ExpectGreedy(*engine, LoadGolden());
}

class LongRopeTest : public ArchReferenceTest {};
class SlidingWindowTest : public ArchReferenceTest {};

TEST_P(LongRopeTest, ShortFactorsWithinTheOriginalContext) {
  auto engine = Load(/*context=*/32);
  ASSERT_TRUE(engine);
  const Golden g = LoadGolden("golden-short.json");
  ExpectPrefill(*engine, g);
  ExpectGreedy(*engine, g);
  // The two contexts' logits differ: the factors matter (else this test would prove nothing).
  const Golden long_golden = LoadGolden();
  ASSERT_FALSE(g.positions.empty());
  EXPECT_GT(std::abs(g.positions.back().logsumexp - long_golden.positions.back().logsumexp), 1e-3);
}

// Past the window the sliding layers' old KV pages go back to the pool (Gemma's global layers
// keep theirs), and what relies on the cache still gives the golden logits: a prompt that
// shares a prefix (its rows were released: computed again), and a saved and loaded session.
TEST_P(SlidingWindowTest, PagesGoBackToThePool) {
  auto engine = Load();
  ASSERT_TRUE(engine);
  const Golden g = LoadGolden();
  std::vector<int32_t> all = g.input_ids;
  all.insert(all.end(), g.new_tokens.begin(), g.new_tokens.end() - 1);
  const int64_t free_before = engine->kv_pool().free_pages();
  Session session(*engine);
  ASSERT_TRUE(session.Feed(all).has_value());
  const int32_t layers = engine->config().n_layers;
  const int64_t pages_per_layer = (static_cast<int64_t>(all.size()) + 3) / 4;  // page size 4
  const int64_t used = free_before - engine->kv_pool().free_pages();
  EXPECT_LT(used, pages_per_layer * layers);
  int32_t global = 0;
  for (int32_t layer = 0; layer < layers; ++layer)
    global += !engine->config().IsSlidingLayer(layer);
  // A sliding layer keeps at most the pages its window reaches into (window / 4 + 2).
  const int64_t window_pages = engine->config().sliding_window / 4 + 2;
  EXPECT_LE(used, global * pages_per_layer + (layers - global) * window_pages);

  // One file per process: ctest runs the ref and cpu cases of a model side by side.
  const std::string path = ::testing::TempDir() + "kite_window_session_" + GetParam().model + "_" +
                           std::to_string(getpid());
  ASSERT_TRUE(session.Save(path).has_value());
  // The original prompt again: its prefix rows were released, so it is computed afresh.
  auto again = session.FeedPrompt(g.input_ids);
  ASSERT_TRUE(again.has_value()) << again.error().message;
  EXPECT_EQ(again->reused, 0);
  ExpectRow(again->logits, g.positions.back(), "prompt after release");
  Session restored(*engine);
  const Status loaded = restored.Load(path);
  ASSERT_TRUE(loaded.has_value()) << loaded.error().message;
  auto next = restored.Feed(std::span(&g.new_tokens.back(), 1));
  ASSERT_TRUE(next.has_value()) << next.error().message;
  std::filesystem::remove(path);
  // The step after the last golden one has no golden; the restored session must at least agree
  // with the live one fed the same token.
  Session live(*engine);
  std::vector<int32_t> longer = all;
  longer.push_back(g.new_tokens.back());
  auto expected = live.Feed(longer);
  ASSERT_TRUE(expected.has_value());
  ASSERT_EQ(next->size(), expected->size());
  for (size_t i = 0; i < next->size(); ++i) ASSERT_NEAR((*next)[i], (*expected)[i], 1e-5) << i;
}

// Each model from its folder and its GGUF, on ref and cpu.
std::vector<Case> CasesOf(const std::vector<std::string>& models) {
  std::vector<Case> cases;
  for (const std::string& model : models) {
    for (bool gguf : {false, true}) {
      for (const char* backend : {"ref", "cpu"}) cases.push_back({model, gguf, backend});
    }
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(All, ArchReferenceTest,
                         ::testing::ValuesIn(CasesOf(std::vector<std::string>(
                             std::begin(testing::kArchReferenceModels),
                             std::end(testing::kArchReferenceModels)))),
                         CaseName);
INSTANTIATE_TEST_SUITE_P(Phi, LongRopeTest, ::testing::ValuesIn(CasesOf({"phi4-longrope"})),
                         CaseName);
INSTANTIATE_TEST_SUITE_P(Windowed, SlidingWindowTest,
                         ::testing::ValuesIn(CasesOf({"gemma2", "gemma2-scalar", "gemma3",
                                                      "mistral-window"})),
                         CaseName);

}  // namespace
}  // namespace kite
