// Qwen3, Gemma 2, Gemma 3, Phi-3 (LongRoPE) and a Mistral whose sliding window is shorter than
// the test sequences, against their PyTorch references (tools/make_arch_references.py, run here
// once: the weights are made at test time, not committed): from the HF folder and from the GGUF
// `kite convert` writes of it, on the ref and cpu backends, the prefill logits at every
// position, a token-by-token decode through the KV cache (the window applied to cached
// positions), and greedy generation. Phi-3 also with a context of 32, inside its original
// LongRoPE context (short factors; the default context of 128 takes the long ones).
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cli_runner.h"
#include "reference_golden.h"
#include "runtime/engine.h"
#include "runtime/session.h"

namespace kite {
namespace {

using testing::ExpectRow;
using testing::Golden;
using testing::kTieMargin;

const char* const kModels[] = {"qwen3", "gemma2", "gemma3", "phi3-longrope", "mistral-window"};

// The folders tools/make_arch_references.py writes, once per test binary; "" when Debian's
// PyTorch is missing (the tests then skip, saying so).
const std::string& ReferenceDir(std::string* why) {
  static std::string dir, error;
  static bool made = false;
  if (!made) {
    made = true;
    const std::string out = ::testing::TempDir() + "kite_arch_reference";
    std::filesystem::remove_all(out);
    const auto run = testing::RunProgram(
        "/usr/bin/python3", {testing::SourcePath("tools/make_arch_references.py"), "--out", out});
    if (run.exit_code == 0) {
      dir = out;
    } else {
      error = "tools/make_arch_references.py failed (exit " + std::to_string(run.exit_code) +
              "; python3-torch and python3-sentencepiece are needed): " + run.err;
    }
  }
  *why = error;
  return dir;
}

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
    dir_ = ReferenceDir(&why);
    if (dir_.empty()) GTEST_SKIP() << why;
  }

  std::string Folder() const { return dir_ + "/" + GetParam().model; }

  // The GGUF `kite convert` writes of the folder (f32: the goldens are float compute), once.
  std::string Gguf() const {
    static std::map<std::string, std::string> paths;
    std::string& path = paths[GetParam().model];
    if (path.empty()) {
      path = dir_ + "/" + GetParam().model + ".gguf";
      const auto convert = testing::RunKite({"convert", Folder(), "-o", path, "--type", "f32", "-q"});
      EXPECT_EQ(convert.exit_code, 0) << convert.err;
    }
    return path;
  }

  std::unique_ptr<Engine> Load(int32_t context = 0) const {
    EngineOptions options;
    options.backend = GetParam().backend;
    options.kv_dtype = DType::kF32;  // the goldens are float compute
    options.kv_page_size = 4;        // the window crosses page boundaries
    options.context_length = context;
    options.threads = 2;
    auto engine = Engine::Load(GetParam().gguf ? Gguf() : Folder(), options);
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

TEST_P(ArchReferenceTest, LongRopeShortFactorsWithinTheOriginalContext) {
  if (GetParam().model != "phi3-longrope") GTEST_SKIP() << "LongRoPE is Phi-3's";
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

std::vector<Case> AllCases() {
  std::vector<Case> cases;
  for (const char* model : kModels) {
    for (bool gguf : {false, true}) {
      for (const char* backend : {"ref", "cpu"}) cases.push_back({model, gguf, backend});
    }
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(All, ArchReferenceTest, ::testing::ValuesIn(AllCases()), CaseName);

}  // namespace
}  // namespace kite
