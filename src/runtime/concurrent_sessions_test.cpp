// Sessions of one Engine at once: on several threads (each output equals the same prompt run
// alone), and alternating on one thread (neither recomputes the other's history). Runs under
// ThreadSanitizer in `make test` (make test-tsan).
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "runtime/engine.h"
#include "runtime/session.h"
#include "runtime/testing.h"

namespace kite {
namespace {

const std::string kReference = KITE_SOURCE_DIR "/testdata/reference/";

// Four prompts of different lengths (one past the prefill chunk, so that sessions also share
// the graphs of the shorter last chunks, compiled while others run).
std::vector<std::vector<int32_t>> Prompts() {
  std::vector<std::vector<int32_t>> prompts = {
      {1, 538, 592, 656, 562, 923, 889, 960, 951, 279, 441, 896, 935},
      {1, 17, 250, 3},
      {1, 99, 42, 7, 180, 66, 12, 5, 140, 77, 300, 301, 302, 303, 304, 305, 306, 307, 308, 309},
      {1, 700}};
  return prompts;
}

std::unique_ptr<Engine> LoadGqa(int32_t parallel) {
  EngineOptions options;
  options.context_length = 64;
  options.prefill_chunk = 8;
  options.kv_page_size = 4;
  options.threads = 2;  // a pool the threads contend for
  options.parallel = parallel;
  auto engine = Engine::Load(kReference + "llama-gqa", options);
  EXPECT_TRUE(engine.has_value()) << engine.error().message;
  return engine ? std::move(*engine) : nullptr;
}

TEST(ConcurrentSessions, FourThreadsEachGenerateWhatTheirPromptGivesAlone) {
  const std::vector<std::vector<int32_t>> prompts = Prompts();
  constexpr int32_t kTokens = 12;
  std::vector<std::vector<int32_t>> alone(prompts.size());
  {
    auto engine = LoadGqa(1);
    ASSERT_TRUE(engine);
    for (size_t i = 0; i < prompts.size(); ++i) {
      Session session(*engine);
      auto result =
          session.Generate(prompts[i], testing::GreedyOptions(kTokens, /*ignore_eos=*/true));
      ASSERT_TRUE(result.has_value()) << result.error().message;
      alone[i] = result->ids;
    }
  }

  auto engine = LoadGqa(static_cast<int32_t>(prompts.size()));
  ASSERT_TRUE(engine);
  std::vector<std::vector<int32_t>> together(prompts.size());
  std::vector<std::string> errors(prompts.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < prompts.size(); ++i) {
    threads.emplace_back([&, i] {
      Session session(*engine);
      // Two turns each, so that sessions also reuse their own cache while others compute.
      for (int turn = 0; turn < 2; ++turn) {
        auto result =
            session.Generate(prompts[i], testing::GreedyOptions(kTokens, /*ignore_eos=*/true));
        if (!result) {
          errors[i] = result.error().message;
          return;
        }
        together[i] = result->ids;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (size_t i = 0; i < prompts.size(); ++i) {
    EXPECT_EQ(errors[i], "") << "prompt " << i;
    EXPECT_EQ(together[i], alone[i]) << "prompt " << i;
    EXPECT_EQ(together[i].size(), static_cast<size_t>(kTokens)) << "prompt " << i;
  }
  EXPECT_EQ(engine->kv_pool().free_pages(),
            engine->kv_pool().config().n_pages);  // every session gave its pages back
}

// Two conversations taking turns on one engine: each turn computes only its own new tokens.
TEST(ConcurrentSessions, AlternatingSessionsNeverRecomputeEachOthersHistory) {
  auto engine = LoadGqa(2);
  ASSERT_TRUE(engine);
  const std::vector<std::vector<int32_t>> prompts = Prompts();
  Session a(*engine);
  Session b(*engine);
  std::vector<int32_t> history_a = prompts[0];
  std::vector<int32_t> history_b = prompts[2];
  for (int turn = 0; turn < 3; ++turn) {
    for (auto [session, history] : {std::pair{&a, &history_a}, std::pair{&b, &history_b}}) {
      const uint64_t before = engine->tokens_computed();
      auto result = session->Generate(*history, testing::GreedyOptions(3, /*ignore_eos=*/true));
      ASSERT_TRUE(result.has_value()) << result.error().message;
      // The prompt is the conversation so far: all of it but the new turn comes from the cache.
      // Computed: the new prompt tokens, then each sampled token but the last (never fed).
      const int32_t new_tokens = result->prompt_tokens - result->reused_tokens;
      EXPECT_EQ(engine->tokens_computed() - before, static_cast<uint64_t>(new_tokens + 2))
          << "turn " << turn;
      if (turn > 0) {  // last reply token + 2 new
        EXPECT_EQ(new_tokens, 3) << "turn " << turn;
      }
      history->insert(history->end(), result->ids.begin(), result->ids.end());
      history->insert(history->end(), {600 + turn, 650 + turn});
    }
  }
}

}  // namespace
}  // namespace kite
