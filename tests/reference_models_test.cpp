// The whole path from a model on disk to logits and tokens, against the PyTorch goldens of
// testdata/reference (tools/make_reference_models.py; see its README for the tolerances): for
// every reference model, loaded from its HF folder and from the GGUF file llama.cpp's converter
// would make of it (q/k rows permuted for interleaved RoPE, Llama 3 scaling as rope_freqs):
// prefill logits, token-by-token decode, chunked prefill, greedy generation, prompt reuse and
// session save/load.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/mapped_file.h"
#include "reference_gguf.h"
#include "reference_golden.h"
#include "runtime/engine.h"
#include "runtime/session.h"

namespace kite {
namespace {

using testing::ExpectRow;
using testing::Golden;
using testing::kTieMargin;

const std::string kReference = KITE_SOURCE_DIR "/testdata/reference/";
const Golden& LoadGolden(const std::string& model) {
  static std::map<std::string, Golden> cache;
  if (auto it = cache.find(model); it != cache.end()) return it->second;
  return cache[model] = testing::LoadGoldenFile(kReference + model + "/golden.json");
}

// The GGUF made from each reference folder, written once per test binary.
const std::string& GgufOf(const std::string& model) {
  static std::map<std::string, std::string> paths;
  std::string& path = paths[model];
  if (path.empty()) {
    path = ::testing::TempDir() + "kite_reference_" + model + ".gguf";
    const Status written = testing::WriteGgufLikeLlamaCpp(kReference + model, path);
    EXPECT_TRUE(written.has_value()) << written.error().message;
  }
  return path;
}

struct Case {
  std::string model;
  bool gguf;
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.model << (c.gguf ? " (gguf)" : " (hf)"); }
std::string CaseName(const ::testing::TestParamInfo<Case>& info) {
  std::string name = info.param.model + (info.param.gguf ? "_gguf" : "_hf");
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
}

class ReferenceModelTest : public ::testing::TestWithParam<Case> {
 protected:
  std::unique_ptr<Engine> Load(int32_t prefill_chunk = 128) {
    const Case& c = GetParam();
    EngineOptions options;
    options.kv_dtype = DType::kF32;  // the goldens are float compute; an f16 cache is 3e-2 off
    options.prefill_chunk = prefill_chunk;
    options.kv_page_size = 4;  // several pages, so page boundaries are crossed
    auto engine = Engine::Load(c.gguf ? GgufOf(c.model) : kReference + c.model, options);
    EXPECT_TRUE(engine.has_value()) << engine.error().message;
    return engine ? std::move(*engine) : nullptr;
  }
  const Golden& golden() { return LoadGolden(GetParam().model); }
};

TEST_P(ReferenceModelTest, TokenizerGivesTheGoldenIds) {
  auto engine = Load();
  ASSERT_TRUE(engine);
  if (GetParam().gguf) GTEST_SKIP() << "the test GGUF's vocabulary has no real scores";
  auto ids = engine->tokenizer().Encode(golden().prompt, /*add_special=*/true);
  ASSERT_TRUE(ids.has_value()) << ids.error().message;
  EXPECT_EQ(*ids, golden().input_ids);
}

TEST_P(ReferenceModelTest, PrefillMatchesEveryPosition) {
  auto engine = Load();
  ASSERT_TRUE(engine);
  Session session(*engine);
  const Golden& g = golden();
  auto logits = session.Feed(g.input_ids, /*all_logits=*/true);
  ASSERT_TRUE(logits.has_value()) << logits.error().message;
  const size_t vocab = engine->config().vocab;
  ASSERT_EQ(logits->size(), g.input_ids.size() * vocab);
  for (size_t p = 0; p < g.input_ids.size(); ++p) {
    ExpectRow(logits->subspan(p * vocab, vocab), g.positions[p], "position " + std::to_string(p));
  }
}

TEST_P(ReferenceModelTest, TokenByTokenDecodeMatchesPrefill) {
  auto engine = Load();
  ASSERT_TRUE(engine);
  Session session(*engine);
  const Golden& g = golden();
  for (size_t p = 0; p < g.input_ids.size(); ++p) {
    auto logits = session.Feed(std::span(&g.input_ids[p], 1));
    ASSERT_TRUE(logits.has_value()) << logits.error().message;
    ExpectRow(*logits, g.positions[p], "decode step " + std::to_string(p));
  }
  EXPECT_EQ(session.n_past(), static_cast<int32_t>(g.input_ids.size()));
}

TEST_P(ReferenceModelTest, PrefillInChunksOfFiveMatches) {
  auto engine = Load(/*prefill_chunk=*/5);
  ASSERT_TRUE(engine);
  Session session(*engine);
  const Golden& g = golden();
  auto all = session.Feed(g.input_ids, /*all_logits=*/true);  // chunks of 5, 5, 3
  ASSERT_TRUE(all.has_value()) << all.error().message;
  const size_t vocab = engine->config().vocab;
  for (size_t p = 0; p < g.input_ids.size(); ++p) {
    ExpectRow(all->subspan(p * vocab, vocab), g.positions[p], "position " + std::to_string(p));
  }
  session.Reset();
  auto last = session.Feed(g.input_ids);
  ASSERT_TRUE(last.has_value()) << last.error().message;
  ASSERT_EQ(last->size(), vocab);
  ExpectRow(*last, g.positions.back(), "last position");
}

TEST_P(ReferenceModelTest, GreedyGenerationMatchesGoldenTokens) {
  auto engine = Load();
  ASSERT_TRUE(engine);
  const Golden& g = golden();
  Session session(*engine);
  Session::GenerateOptions options;
  options.max_tokens = static_cast<int32_t>(g.new_tokens.size());
  options.sampler.temperature = 0.0f;
  std::vector<int32_t> streamed;
  options.on_token = [&](int32_t id, std::string_view) {
    if (id >= 0) streamed.push_back(id);
    return true;
  };
  auto result = session.Generate(g.input_ids, options);
  ASSERT_TRUE(result.has_value()) << result.error().message;
  EXPECT_EQ(result->stop_reason, "max_tokens");
  EXPECT_EQ(result->prefill_tokens, static_cast<int32_t>(g.input_ids.size()));
  ASSERT_EQ(result->ids.size(), g.new_tokens.size());
  for (size_t i = 0; i < g.new_tokens.size(); ++i) {
    ASSERT_EQ(result->ids[i], g.new_tokens[i]) << "step " << i;
    if (g.margins[i] < kTieMargin) break;  // a near tie may flip; what follows would differ
  }
  EXPECT_EQ(streamed, result->ids);
  // Every generated token but the last was fed back.
  EXPECT_EQ(session.n_past(), static_cast<int32_t>(g.input_ids.size() + g.new_tokens.size() - 1));

  // The logits behind each step, by value, through the KV-cache decode loop.
  session.Reset();
  auto logits = session.Feed(g.input_ids);
  for (size_t i = 0; i < g.new_tokens.size(); ++i) {
    ASSERT_TRUE(logits.has_value()) << logits.error().message;
    ExpectRow(*logits, g.steps[i], "greedy step " + std::to_string(i));
    logits = session.Feed(std::span(&g.new_tokens[i], 1));
  }
}

TEST_P(ReferenceModelTest, FeedPromptReusesTheCommonPrefix) {
  auto engine = Load();
  ASSERT_TRUE(engine);
  const Golden& g = golden();
  const size_t vocab = engine->config().vocab;
  Session session(*engine);
  ASSERT_TRUE(session.Feed(g.input_ids).has_value());
  session.Reset();
  EXPECT_EQ(session.n_past(), 0);

  auto first = session.FeedPrompt(g.input_ids);
  ASSERT_TRUE(first.has_value()) << first.error().message;
  EXPECT_EQ(first->reused, 0);
  ExpectRow(first->logits, g.positions.back(), "after reset");

  // The same prompt again: all but the last token come from the cache.
  auto again = session.FeedPrompt(g.input_ids);
  ASSERT_TRUE(again.has_value()) << again.error().message;
  EXPECT_EQ(again->reused, static_cast<int32_t>(g.input_ids.size()) - 1);
  ExpectRow(again->logits, g.positions.back(), "same prompt");

  // A prompt that diverges at position 6, then the original again.
  std::vector<int32_t> other(g.input_ids.begin(), g.input_ids.begin() + 6);
  other.push_back(g.input_ids[6] == 5 ? 6 : 5);
  auto diverged = session.FeedPrompt(other);
  ASSERT_TRUE(diverged.has_value());
  EXPECT_EQ(diverged->reused, 6);
  auto back = session.FeedPrompt(g.input_ids);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->reused, 6);
  std::vector<float> reused(back->logits.begin(), back->logits.end());
  ASSERT_EQ(reused.size(), vocab);
  ExpectRow(reused, g.positions.back(), "after divergence");
  EXPECT_EQ(session.history(), g.input_ids);
}

TEST_P(ReferenceModelTest, SaveAndLoadRoundTrip) {
  auto engine = Load();
  ASSERT_TRUE(engine);
  const Golden& g = golden();
  const std::span<const int32_t> ids(g.input_ids);
  const std::string path = ::testing::TempDir() + "kite_session_" + CaseName({GetParam(), 0});
  {
    Session session(*engine);
    ASSERT_TRUE(session.Feed(ids.first(9)).has_value());
    const Status saved = session.Save(path);
    ASSERT_TRUE(saved.has_value()) << saved.error().message;
  }
  Session restored(*engine);
  const Status loaded = restored.Load(path);
  ASSERT_TRUE(loaded.has_value()) << loaded.error().message;
  EXPECT_EQ(restored.history(), std::vector<int32_t>(ids.begin(), ids.begin() + 9));
  auto logits = restored.Feed(ids.subspan(9));
  ASSERT_TRUE(logits.has_value()) << logits.error().message;
  ExpectRow(*logits, g.positions.back(), "after load");
  std::filesystem::remove(path);
}

TEST_P(ReferenceModelTest, SessionsSharingAnEngineStayCorrect) {
  auto engine = Load();
  ASSERT_TRUE(engine);
  const Golden& g = golden();
  const std::span<const int32_t> ids(g.input_ids);
  Session a(*engine);
  Session b(*engine);
  ASSERT_TRUE(a.Feed(ids.first(7)).has_value());
  ASSERT_TRUE(b.Feed(ids.first(3)).has_value());  // takes the cache from a
  auto logits = a.Feed(ids.subspan(7));           // a re-feeds its 7 tokens first
  ASSERT_TRUE(logits.has_value()) << logits.error().message;
  ExpectRow(*logits, g.positions.back(), "session a");
  logits = b.Feed(ids.subspan(3));
  ASSERT_TRUE(logits.has_value()) << logits.error().message;
  ExpectRow(*logits, g.positions.back(), "session b");
}

std::vector<Case> AllCases() {
  std::vector<Case> cases;
  for (const char* model :
       {"llama-gqa", "qwen2-bias", "llama3-rope", "mistral", "llama-bias-linear"}) {
    cases.push_back({model, false});
    cases.push_back({model, true});
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(All, ReferenceModelTest, ::testing::ValuesIn(AllCases()), CaseName);

}  // namespace
}  // namespace kite
