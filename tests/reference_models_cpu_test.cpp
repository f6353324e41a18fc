// The reference models (testdata/reference) end to end on cpu and on ref, from their Hugging Face
// folders and from GGUF files written as llama.cpp writes them: prefill logits, greedy tokens and
// decode logits agree. (The op-by-op harness: backend_consistency_test.cpp.)
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "backends/testing.h"
#include "reference_gguf.h"
#include "runtime/engine.h"
#include "runtime/session.h"

namespace kite {
namespace {

// Float weights run the float kernels (no int8 activations): logits differ from ref only by
// f32 summation order. The reference README measures f32-vs-f64 logits at <= 8e-6; 1e-4 leaves
// room for another order, and every modelling mistake it lists moves logits by more than 3.
constexpr double kLogitTolerance = 1e-4;

class ReferenceModelsOnCpu : public ::testing::TestWithParam<std::pair<std::string, bool>> {
 protected:
  std::unique_ptr<Engine> Load(const std::string& backend) {
    const auto& [model, gguf] = GetParam();
    std::string path = KITE_SOURCE_DIR "/testdata/reference/" + model;
    if (gguf) {
      path = ::testing::TempDir() + "kite_consistency_" + model + ".gguf";
      // Written once: the first engine maps the file while the second loads it.
      static std::set<std::string> written_once;
      if (!written_once.insert(path).second) return LoadPath(path, backend);
      const Status written =
          testing::WriteGgufLikeLlamaCpp(KITE_SOURCE_DIR "/testdata/reference/" + model, path);
      EXPECT_TRUE(written.has_value()) << written.error().message;
    }
    return LoadPath(path, backend);
  }

  std::unique_ptr<Engine> LoadPath(const std::string& path, const std::string& backend) {
    EngineOptions options;
    options.backend = backend;
    options.threads = 2;
    options.kv_dtype = DType::kF32;
    options.kv_page_size = 4;   // positions cross pages
    options.prefill_chunk = 5;  // prompts run as several chunks, then a shorter one
    auto engine = Engine::Load(path, options);
    EXPECT_TRUE(engine.has_value()) << engine.error().message;
    return engine ? std::move(*engine) : nullptr;
  }
};

std::vector<int32_t> Prompt() {
  // 13 ids of the reference vocabulary, as the goldens' prompts; any ids do for a comparison.
  return {1, 450, 4996, 17354, 1701, 432, 17204, 975, 278, 17366, 11203, 29889, 13};
}

TEST_P(ReferenceModelsOnCpu, LogitsAndGreedyTokensMatchRef) {
  auto cpu = Load("cpu");
  auto ref = Load("ref");
  ASSERT_TRUE(cpu && ref);
  const int64_t vocab = cpu->config().vocab;
  std::vector<int32_t> prompt = Prompt();
  for (int32_t& id : prompt) id %= static_cast<int32_t>(vocab);

  Session cpu_session(*cpu), ref_session(*ref);
  auto cpu_logits = cpu_session.Feed(prompt, /*all_logits=*/true);
  auto ref_logits = ref_session.Feed(prompt, /*all_logits=*/true);
  ASSERT_TRUE(cpu_logits.has_value()) << cpu_logits.error().message;
  ASSERT_TRUE(ref_logits.has_value()) << ref_logits.error().message;
  testing::ExpectClose(*cpu_logits, *ref_logits, 0, kLogitTolerance, "prefill logits");

  // Greedy decode, token by token through the KV cache: the same tokens, logits within tolerance.
  Session::GenerateOptions options;
  options.max_tokens = 16;
  options.sampler.temperature = 0.0f;
  cpu_session.Reset();
  ref_session.Reset();
  auto cpu_result = cpu_session.Generate(prompt, options);
  auto ref_result = ref_session.Generate(prompt, options);
  ASSERT_TRUE(cpu_result.has_value()) << cpu_result.error().message;
  ASSERT_TRUE(ref_result.has_value()) << ref_result.error().message;
  EXPECT_EQ(cpu_result->ids, ref_result->ids);
  auto cpu_step = cpu_session.Feed(std::span(&prompt[0], 1));
  auto ref_step = ref_session.Feed(std::span(&prompt[0], 1));
  ASSERT_TRUE(cpu_step.has_value() && ref_step.has_value());
  testing::ExpectClose(*cpu_step, *ref_step, 0, kLogitTolerance, "decode logits after generation");
}

INSTANTIATE_TEST_SUITE_P(All, ReferenceModelsOnCpu,
                         ::testing::Values(std::pair<std::string, bool>{"llama-gqa", false},
                                           std::pair<std::string, bool>{"llama-gqa", true},
                                           std::pair<std::string, bool>{"qwen2-bias", false},
                                           std::pair<std::string, bool>{"llama3-rope", true},
                                           std::pair<std::string, bool>{"mistral", false},
                                           std::pair<std::string, bool>{"llama-bias-linear",
                                                                        false}),
                         [](const auto& info) {
                           std::string name =
                               info.param.first + (info.param.second ? "_gguf" : "_hf");
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

}  // namespace
}  // namespace kite
