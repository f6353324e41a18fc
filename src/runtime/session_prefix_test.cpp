// What a server's scheduler asks of a session besides feeding: ReusePrefix (keep the common
// prefix with a new prompt), CopyPrefixFrom (the prefix cache across sessions) and
// GenerateOptions::cancel (stops before the next prefill chunk or decode step, pages back).
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/engine.h"
#include "runtime/observer.h"
#include "runtime/session.h"
#include "runtime/testing.h"

namespace kite {
namespace {

const std::string kReference = KITE_SOURCE_DIR "/testdata/reference/";

std::unique_ptr<Engine> LoadGqa(int32_t parallel = 2) {
  EngineOptions options;
  options.context_length = 64;
  options.prefill_chunk = 8;
  options.kv_page_size = 4;
  options.threads = 2;
  options.parallel = parallel;
  auto engine = Engine::Load(kReference + "llama-gqa", options);
  EXPECT_TRUE(engine.has_value()) << engine.error().message;
  return engine ? std::move(*engine) : nullptr;
}

const std::vector<int32_t> kSystem = {1, 538, 592, 656, 562, 923, 889, 960, 951, 279, 441};

std::vector<int32_t> With(std::vector<int32_t> ids, std::vector<int32_t> tail) {
  ids.insert(ids.end(), tail.begin(), tail.end());
  return ids;
}

TEST(SessionPrefix, ReusePrefixKeepsTheCommonPartAndTheContinuationEqualsAFreshRun) {
  auto engine = LoadGqa();
  ASSERT_TRUE(engine);
  const int64_t all_pages = engine->kv_pool().free_pages();
  Session session(*engine);
  ASSERT_TRUE(
      session
          .Generate(With(kSystem, {17, 250, 3, 99}), testing::GreedyOptions(8, /*ignore_eos=*/true))
          .has_value());
  const std::vector<int32_t> second = With(kSystem, {42, 7, 180});
  EXPECT_EQ(session.ReusePrefix(second), static_cast<int32_t>(kSystem.size()));
  EXPECT_EQ(session.history(), kSystem);
  // 11 positions on pages of 4: 3 pages in each of 2 layers.
  EXPECT_EQ(engine->kv_pool().free_pages(), all_pages - 2 * 3);
  // The whole prompt in the history: its last token is still to be fed, so it is not kept.
  EXPECT_EQ(session.ReusePrefix(kSystem), static_cast<int32_t>(kSystem.size()) - 1);
  session.Truncate(5);  // 2 pages a layer
  EXPECT_EQ(session.history(), std::vector<int32_t>(kSystem.begin(), kSystem.begin() + 5));
  EXPECT_EQ(engine->kv_pool().free_pages(), all_pages - 2 * 2);
  session.Truncate(9);  // longer than the history: nothing changes
  EXPECT_EQ(session.n_past(), 5);
  EXPECT_EQ(session.ReusePrefix(std::vector<int32_t>{5, 6}), 0);
  EXPECT_EQ(engine->kv_pool().free_pages(), all_pages);

  ASSERT_TRUE(session.Feed(kSystem).has_value());
  ASSERT_EQ(session.ReusePrefix(second), static_cast<int32_t>(kSystem.size()));
  auto continued = session.Feed(std::span(second).subspan(kSystem.size()));
  ASSERT_TRUE(continued.has_value()) << continued.error().message;
  Session fresh(*engine);
  auto whole = fresh.Feed(second);
  ASSERT_TRUE(whole.has_value()) << whole.error().message;
  ASSERT_EQ(continued->size(), whole->size());
  for (size_t i = 0; i < whole->size(); ++i) {
    ASSERT_NEAR((*continued)[i], (*whole)[i], 1e-4f) << "logit " << i;
  }
  auto a = session.Generate(second, testing::GreedyOptions(10, /*ignore_eos=*/true));
  auto b = fresh.Generate(second, testing::GreedyOptions(10, /*ignore_eos=*/true));
  ASSERT_TRUE(a.has_value() && b.has_value());
  EXPECT_EQ(a->ids, b->ids);
  EXPECT_EQ(a->reused_tokens, static_cast<int32_t>(second.size()) - 1);
}

TEST(SessionPrefix, CopiedPrefixGivesTheSameLogitsAsTheSource) {
  auto engine = LoadGqa(/*parallel=*/3);
  ASSERT_TRUE(engine);
  Session source(*engine), copy(*engine);
  ASSERT_TRUE(source.Feed(kSystem).has_value());
  // copy's own, longer and different history is replaced, and its pages past the prefix go back.
  std::vector<int32_t> own(20);
  for (int i = 0; i < 20; ++i) own[i] = 100 + i;
  ASSERT_TRUE(copy.Feed(own).has_value());
  const int64_t free_before = engine->kv_pool().free_pages();
  ASSERT_TRUE(copy.CopyPrefixFrom(source, 10).has_value());
  EXPECT_EQ(copy.history(), std::vector<int32_t>(kSystem.begin(), kSystem.begin() + 10));
  EXPECT_EQ(engine->kv_pool().free_pages(), free_before + 2 * (5 - 3));  // 20 -> 10 positions

  // Both at the same 10 tokens, fed the same continuation: the same bits.
  ASSERT_EQ(source.ReusePrefix(kSystem), 10);
  const std::vector<int32_t> next = {kSystem[10], 42, 7, 180, 66};
  auto from_source = source.Feed(next);
  ASSERT_TRUE(from_source.has_value());
  const std::vector<float> expected(from_source->begin(), from_source->end());
  auto from_copy = copy.Feed(next);
  ASSERT_TRUE(from_copy.has_value());
  ASSERT_EQ(from_copy->size(), expected.size());
  EXPECT_EQ(std::memcmp(from_copy->data(), expected.data(), expected.size() * sizeof(float)), 0);

  auto too_long = copy.CopyPrefixFrom(source, source.n_past() + 1);
  ASSERT_FALSE(too_long.has_value());
  EXPECT_NE(too_long.error().message.find("a prefix of 16 tokens from a session that holds 15"),
            std::string::npos)
      << too_long.error().message;
  auto other = LoadGqa();
  ASSERT_TRUE(other);
  Session stranger(*other);
  auto foreign = stranger.CopyPrefixFrom(source, 1);
  ASSERT_FALSE(foreign.has_value());
  EXPECT_NE(foreign.error().message.find("another engine"), std::string::npos);
  EXPECT_EQ(stranger.n_past(), 0);
}

// Sets the flag after the first `after` nodes of a run: a cancel arriving mid-chunk.
struct CancelAfter : Observer {
  std::atomic<bool>* flag;
  int after;
  Status AfterNode(const Executable&, int32_t, const TensorArg&) override {
    if (--after == 0) flag->store(true);
    return Ok();
  }
};

TEST(SessionCancel, StopsBeforeTheNextChunkOrStepAndReturnsThePages) {
  auto engine = LoadGqa();
  ASSERT_TRUE(engine);
  const int64_t all_pages = engine->kv_pool().free_pages();
  std::atomic<bool> cancel{false};
  Session session(*engine);
  Session::GenerateOptions options = testing::GreedyOptions(20, /*ignore_eos=*/true);
  options.cancel = &cancel;

  // During decode: set when the 3rd token is sampled, so it is not fed.
  const uint64_t before_decode = engine->tokens_computed();
  int tokens = 0;
  options.on_token = [&](int32_t, std::string_view) {
    if (++tokens == 3) cancel = true;
    return true;
  };
  auto decoding = session.Generate(kSystem, options);
  ASSERT_TRUE(decoding.has_value()) << decoding.error().message;
  EXPECT_EQ(decoding->stop_reason, "cancelled");
  EXPECT_EQ(decoding->ids.size(), 3u);
  EXPECT_EQ(engine->tokens_computed() - before_decode, kSystem.size() + 2);
  EXPECT_EQ(session.n_past(), 0);
  EXPECT_EQ(engine->kv_pool().free_pages(), all_pages);

  // During the prefill of a 30-token prompt (4 chunks of 8): the first chunk ends, no other runs.
  options.on_token = nullptr;
  cancel = false;
  ASSERT_TRUE(session.Feed(std::vector<int32_t>{1, 5, 6}).has_value());  // a prefix it keeps
  std::vector<int32_t> prompt = {1, 5, 6};
  for (int i = 0; i < 27; ++i) prompt.push_back(10 + i);
  CancelAfter observer;
  observer.flag = &cancel;
  observer.after = 1;
  session.set_observer(&observer);
  const uint64_t computed = engine->tokens_computed();
  auto prefilling = session.Generate(prompt, options);
  session.set_observer(nullptr);
  ASSERT_TRUE(prefilling.has_value()) << prefilling.error().message;
  EXPECT_EQ(prefilling->stop_reason, "cancelled");
  EXPECT_TRUE(prefilling->ids.empty());
  EXPECT_EQ(engine->tokens_computed() - computed, 8u);  // one chunk of the 27 to feed
  EXPECT_EQ(session.history(), std::vector<int32_t>({1, 5, 6}));
  EXPECT_EQ(engine->kv_pool().free_pages(), all_pages - 2);

  // Before it starts: nothing is fed.
  auto before = session.Generate(prompt, options);
  ASSERT_TRUE(before.has_value());
  EXPECT_EQ(before->stop_reason, "cancelled");
  EXPECT_EQ(engine->tokens_computed() - computed, 8u);
  EXPECT_EQ(session.n_past(), 3);
}

}  // namespace
}  // namespace kite
