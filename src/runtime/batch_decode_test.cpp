// BatchDecoder: a batched step gives each session the bits its own decode step gives alone
// (ref and cpu, f16 and q8_0 KV, B = 1..8, sessions at different positions), errors change
// nothing, and decoders on several threads keep to their own sessions (run under
// ThreadSanitizer by make test-tsan).
#include "runtime/batch_decode.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "models/test_model.h"
#include "runtime/engine.h"
#include "runtime/session.h"

namespace kite {
namespace {

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Heads of 32 (whole q8_0 blocks); 128 hidden rows are 8 groups of the cpu matmul and the 300
// logits 19, so its chunks take both the 4-group and the single-group tiles.
std::string ModelPath(DType weights) {
  const std::string path =
      ::testing::TempDir() + "kite_batch_decode_" + std::string(DTypeName(weights)) + ".gguf";
  testing::TestModelOptions model;
  model.hidden = 128;
  model.n_heads = 4;
  model.n_kv_heads = 2;
  model.head_dim = 32;
  model.ffn = 256;
  model.dtype = weights;
  EXPECT_TRUE(testing::WriteTestModel(path, model).has_value());
  return path;
}

std::unique_ptr<Engine> Load(const std::string& backend, DType kv, DType weights,
                             int32_t parallel = 16, int32_t context = 64) {
  EngineOptions options;
  options.backend = backend;
  options.kv_dtype = kv;
  options.context_length = context;
  options.prefill_chunk = 8;
  options.kv_page_size = 4;
  options.parallel = parallel;
  options.threads = 2;
  auto engine = Engine::Load(ModelPath(weights), options);
  EXPECT_TRUE(engine.has_value()) << engine.error().message;
  return engine ? std::move(*engine) : nullptr;
}

// Prompt i: 3 + 2i tokens, so that the sessions of a step sit at different positions (and on
// different KV pages).
std::vector<int32_t> Prompt(int i) {
  std::vector<int32_t> ids = {1};
  for (int j = 0; j < 2 + 2 * i; ++j) ids.push_back(3 + (37 * i + 11 * j) % 290);
  return ids;
}

int32_t Argmax(std::span<const float> logits) {
  return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

using Case = std::tuple<std::string, DType, DType>;  // backend, KV type, weight type

class BatchDecodeBits : public ::testing::TestWithParam<Case> {};

// For each B, B sessions step together for a few steps while twins with the same prompts take
// the same tokens alone; every row must equal its twin's logits bit for bit.
TEST_P(BatchDecodeBits, EachRowIsTheBitsOfItsSessionAlone) {
  const auto& [backend, kv, weights] = GetParam();
  auto engine = Load(backend, kv, weights);
  ASSERT_TRUE(engine);
  const int32_t vocab = engine->config().vocab;
  BatchDecoder decoder(*engine);
  for (int batch = 1; batch <= 8; ++batch) {
    std::vector<std::unique_ptr<Session>> sessions, twins;
    std::vector<Session*> rows;
    std::vector<int32_t> next;
    for (int i = 0; i < batch; ++i) {
      // Odd batches take the prompts in reverse: a session's row does not depend on its place.
      const std::vector<int32_t> prompt = Prompt(batch % 2 ? batch - 1 - i : i);
      sessions.push_back(std::make_unique<Session>(*engine));
      twins.push_back(std::make_unique<Session>(*engine));
      auto logits = sessions.back()->Feed(prompt);
      ASSERT_TRUE(logits.has_value()) << logits.error().message;
      next.push_back(Argmax(*logits));
      ASSERT_TRUE(twins.back()->Feed(prompt).has_value());
      rows.push_back(sessions.back().get());
    }
    for (int step = 0; step < 3; ++step) {
      auto batched = decoder.Step(rows, next);
      ASSERT_TRUE(batched.has_value()) << batched.error().message;
      ASSERT_EQ(batched->size(), static_cast<size_t>(batch) * vocab);
      for (int i = 0; i < batch; ++i) {
        auto alone = twins[i]->Feed(std::span(&next[i], 1));
        ASSERT_TRUE(alone.has_value()) << alone.error().message;
        const std::span<const float> row = batched->subspan(i * vocab, vocab);
        ASSERT_EQ(std::memcmp(row.data(), alone->data(), vocab * sizeof(float)), 0)
            << "B = " << batch << ", row " << i << ", step " << step << ": logit 0 is " << row[0]
            << " batched, " << (*alone)[0] << " alone";
        EXPECT_EQ(sessions[i]->history(), twins[i]->history());
        next[i] = Argmax(row);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(BatchDecode, BatchDecodeBits,
                         ::testing::Values(Case{"ref", DType::kF16, DType::kF32},
                                           Case{"ref", DType::kQ8_0, DType::kF32},
                                           Case{"cpu", DType::kF16, DType::kF32},
                                           Case{"cpu", DType::kQ8_0, DType::kF32},
                                           Case{"cpu", DType::kF16, DType::kF16},
                                           Case{"cpu", DType::kQ8_0, DType::kF16}),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return std::get<0>(info.param) + "_kv_" +
                                  std::string(DTypeName(std::get<1>(info.param))) + "_weights_" +
                                  std::string(DTypeName(std::get<2>(info.param)));
                         });

TEST(BatchDecode, BadStepsAreRefusedNamingTheRowAndChangeNothing) {
  auto engine = Load("cpu", DType::kF16, DType::kF32, /*parallel=*/2, /*context=*/8);
  ASSERT_TRUE(engine);
  auto other = Load("cpu", DType::kF16, DType::kF32, 2, 8);
  ASSERT_TRUE(other);
  BatchDecoder decoder(*engine);
  EXPECT_EQ(decoder.max_batch(), 2);
  Session a(*engine), b(*engine), full(*engine), stranger(*other);
  const std::vector<int32_t> four = {1, 5, 6, 7};
  ASSERT_TRUE(a.Feed(four).has_value());
  ASSERT_TRUE(b.Feed(four).has_value());
  ASSERT_TRUE(full.Feed(std::vector<int32_t>{1, 5, 6, 7, 8, 9, 10, 11}).has_value());
  ASSERT_TRUE(stranger.Feed(four).has_value());

  auto refused = [&](std::vector<Session*> rows, std::vector<int32_t> ids, const std::string& why) {
    const int64_t free_pages = engine->kv_pool().free_pages();
    auto step = decoder.Step(rows, ids);
    ASSERT_FALSE(step.has_value()) << why;
    EXPECT_TRUE(Contains(step.error().message, why)) << step.error().message;
    EXPECT_EQ(a.n_past(), 4);
    EXPECT_EQ(b.n_past(), 4);
    EXPECT_EQ(engine->kv_pool().free_pages(), free_pages);
  };
  refused({&a, &a}, {5, 6}, "row 1 of a batched decode step: a session already in the step");
  refused({&a, &b}, {5, 300},
          "row 1 of a batched decode step: id 300, outside the model's vocabulary");
  refused({&a, &stranger}, {5, 6}, "row 1 of a batched decode step: a session of another engine");
  refused({&full, &a}, {5, 6}, "row 0 of a batched decode step");
  refused({&a, &b}, {5}, "2 sessions with 1 tokens");
  refused({&a, &b, &full}, {5, 6, 7}, "3 sessions; expected 1..2");
  refused({}, {}, "0 sessions");

  // The pool (2 layers x 2 contexts x 2 pages of 4 positions) is full: a's and b's next
  // positions each need a new page in every layer.
  refused({&a, &b}, {5, 6}, "row 0 of a batched decode step: KV cache");
  full.Reset();
  Session c(*engine);
  ASSERT_TRUE(c.Feed(four).has_value());
  // 2 pages free: a takes them, b finds none, and a gives them back.
  refused({&a, &b}, {5, 6}, "row 1 of a batched decode step: KV cache");
  EXPECT_EQ(engine->kv_pool().free_pages(), 2);
  c.Reset();
  auto step = decoder.Step(std::vector<Session*>{&a, &b}, std::vector<int32_t>{5, 6});
  ASSERT_TRUE(step.has_value()) << step.error().message;
  EXPECT_EQ(a.n_past(), 5);
  EXPECT_EQ(b.history().back(), 6);
}

// Two decoders on two threads, each stepping its own sessions of one engine, while a third
// thread generates alone: every greedy continuation equals the same session's run alone.
TEST(BatchDecode, DecodersOnSeveralThreadsMatchEachSessionAlone) {
  auto engine = Load("cpu", DType::kF16, DType::kF16, /*parallel=*/8);
  ASSERT_TRUE(engine);
  constexpr int kSteps = 6;
  const int32_t vocab = engine->config().vocab;
  auto alone = [&](int i) {
    Session session(*engine);
    auto logits = session.Feed(Prompt(i));
    EXPECT_TRUE(logits.has_value());
    std::vector<int32_t> ids = {Argmax(*logits)};
    for (int s = 0; s < kSteps; ++s)
      ids.push_back(Argmax(*session.Feed(std::span(&ids.back(), 1))));
    return ids;
  };
  std::vector<std::vector<int32_t>> expected;
  for (int i = 0; i < 6; ++i) expected.push_back(alone(i));

  std::vector<std::vector<int32_t>> got(6);
  auto batched = [&](int first) {
    BatchDecoder decoder(*engine);
    std::vector<std::unique_ptr<Session>> sessions;
    std::vector<Session*> rows;
    std::vector<int32_t> next;
    for (int i = first; i < first + 3; ++i) {
      sessions.push_back(std::make_unique<Session>(*engine));
      next.push_back(Argmax(*sessions.back()->Feed(Prompt(i))));
      rows.push_back(sessions.back().get());
      got[i].push_back(next.back());
    }
    for (int s = 0; s < kSteps; ++s) {
      auto logits = decoder.Step(rows, next);
      ASSERT_TRUE(logits.has_value()) << logits.error().message;
      for (int r = 0; r < 3; ++r) {
        next[r] = Argmax(logits->subspan(r * vocab, vocab));
        got[first + r].push_back(next[r]);
      }
    }
  };
  std::vector<int32_t> lone;
  std::thread t1(batched, 0), t2(batched, 3), t3([&] { lone = alone(2); });
  t1.join();
  t2.join();
  t3.join();
  EXPECT_EQ(got, expected);
  EXPECT_EQ(lone, expected[2]);
}

}  // namespace
}  // namespace kite
