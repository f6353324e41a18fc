// A measuring tool, not a test (disabled; tests never assert on time): decode tokens/s of an
// engine on Llama-3.2-1B's shapes (hidden 2048, 32 heads / 8 kv of 64, ffn 8192, vocab 128256,
// tied embeddings, F16 weights) with random weights. Builds 1- and 3-layer models, takes the
// per-layer cost from their difference, and extrapolates to the real model's 16 layers. The
// fastest of several steps is taken: on a shared machine, other load only adds time.
//   kite_runtime_tests --gtest_also_run_disabled_tests --gtest_filter='*DecodeSpeed*'
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <vector>

#include "models/test_model.h"
#include "runtime/session.h"

namespace kite {
namespace {

constexpr int kDecodeSteps = 8;

// The fastest decode step after a short prompt, in seconds.
double DecodeSeconds(int32_t layers) {
  testing::TestModelOptions shape;
  shape.n_layers = layers;
  shape.hidden = 2048;
  shape.n_heads = 32;
  shape.n_kv_heads = 8;
  shape.head_dim = 64;
  shape.ffn = 8192;
  shape.vocab = 128256;
  shape.tokenizer_vocab = 128256;
  shape.context_length = 131072;
  shape.tied = true;
  shape.dtype = DType::kF16;
  const std::string path = ::testing::TempDir() + "kite_speed_" + std::to_string(layers) + ".gguf";
  EXPECT_TRUE(testing::WriteTestModel(path, shape).has_value());
  EngineOptions options;
  options.context_length = 256;
  auto engine = Engine::Load(path, options);
  EXPECT_TRUE(engine.has_value()) << engine.error().message;
  if (!engine) return 0;
  Session session(**engine);
  const std::vector<int32_t> prompt = {1, 1000, 2000, 3000};
  EXPECT_TRUE(session.Feed(prompt).has_value());
  std::vector<double> steps;
  for (int i = 0; i < kDecodeSteps; ++i) {
    const int32_t token = 4000 + i;
    const auto start = std::chrono::steady_clock::now();
    EXPECT_TRUE(session.Feed(std::span(&token, 1)).has_value());
    steps.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::filesystem::remove(path);
  return *std::min_element(steps.begin(), steps.end());
}

TEST(DecodeSpeedTest, DISABLED_Llama32OneBillionShape) {
  const double one = DecodeSeconds(1);
  const double three = DecodeSeconds(3);
  const double per_layer = (three - one) / 2;
  const double rest = one - per_layer;  // embedding, final norm, lm_head
  const double full = rest + 16 * per_layer;
  std::printf("decode step, fastest of %d: 1 layer %.3f s, 3 layers %.3f s\n", kDecodeSteps, one,
              three);
  std::printf("per layer %.3f s, lm_head and the rest %.3f s\n", per_layer, rest);
  std::printf("extrapolated to 16 layers: %.3f s/token = %.3f tokens/s\n", full, 1.0 / full);
}

}  // namespace
}  // namespace kite
