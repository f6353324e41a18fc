// Attention over the paged KV cache: the cache built in steps (prefill chunks, then decode)
// gives the same outputs as one step over all tokens, whatever the page size; run-time misuse is
// an error.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "backends/ref/ref_backend.h"
#include "graph/builder.h"
#include "runtime/kv_pool.h"
#include "runtime/testing.h"
#include "tensor/dequantize.h"
#include "tensor/quantize.h"

namespace kite {
namespace {

constexpr int64_t kTokens = 11;
constexpr int64_t kQHeads = 4;
constexpr int64_t kKvHeads = 2;
constexpr int64_t kDim = 8;

struct Qkv {
  std::vector<float> q, k, v;  // [kTokens, heads, kDim]
};

Qkv RandomQkv() {
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  Qkv qkv;
  for (int64_t i = 0; i < kTokens * kQHeads * kDim; ++i) qkv.q.push_back(dist(rng));
  for (int64_t i = 0; i < kTokens * kKvHeads * kDim; ++i) qkv.k.push_back(dist(rng));
  for (int64_t i = 0; i < kTokens * kKvHeads * kDim; ++i) qkv.v.push_back(dist(rng));
  return qkv;
}

// A graph of one attention node over `count` tokens (layer 1 of the cache).
testing::GraphRunner AttentionGraph(int64_t count, Backend* backend) {
  GraphBuilder b;
  const ValueId q = *b.Input("q", DType::kF32, {count, kQHeads, kDim});
  const ValueId k = *b.Input("k", DType::kF32, {count, kKvHeads, kDim});
  const ValueId v = *b.Input("v", DType::kF32, {count, kKvHeads, kDim});
  const ValueId positions = *b.Input("positions", DType::kI32, {count});
  const ValueId out = *b.Attention("attn", q, k, v, positions,
                                   {.layer = 1, .scale = 1.0f / std::sqrt(float{kDim})});
  EXPECT_TRUE(b.MarkOutput(out));
  Backend* backends[] = {backend};
  return *testing::GraphRunner::Compile(*std::move(b).Finish(), backends);
}

// Runs tokens [begin, begin + count) at their positions; returns their outputs.
std::vector<float> RunChunk(const Qkv& qkv, int64_t begin, int64_t count, KvSequence& cache,
                            Backend* backend) {
  testing::GraphRunner graph = AttentionGraph(count, backend);
  auto slice = [&](const std::vector<float>& x, int64_t heads) {
    return std::vector<float>(x.begin() + begin * heads * kDim,
                              x.begin() + (begin + count) * heads * kDim);
  };
  std::vector<int32_t> positions;
  for (int64_t t = begin; t < begin + count; ++t) positions.push_back(static_cast<int32_t>(t));
  EXPECT_TRUE(graph.SetInput("q", slice(qkv.q, kQHeads)));
  EXPECT_TRUE(graph.SetInput("k", slice(qkv.k, kKvHeads)));
  EXPECT_TRUE(graph.SetInput("v", slice(qkv.v, kKvHeads)));
  EXPECT_TRUE(graph.SetInput("positions", positions));
  EXPECT_TRUE(cache.Resize(begin + count));
  const KvCacheView view = cache.batch_view();
  const Status run = graph.Run(&view);
  EXPECT_TRUE(run.has_value()) << run.error().message;
  const std::span<const float> out = *graph.OutputF32(0);
  return {out.begin(), out.end()};
}

// A pool of 32 pages and one sequence in it.
using Cache = testing::KvCache;
Cache MakeCache(int32_t page_size, DType dtype, int32_t layers = 2) {
  return *Cache::Create({.n_layers = layers,
                         .n_kv_heads = kKvHeads,
                         .head_dim = kDim,
                         .page_size = page_size,
                         .n_pages = 32,
                         .dtype = dtype});
}

TEST(RefAttention, CacheBuiltInStepsEqualsOneStep) {
  const Qkv qkv = RandomQkv();
  RefBackend ref;
  for (DType dtype : {DType::kF32, DType::kF16}) {
    Cache whole_cache = MakeCache(16, dtype);
    const std::vector<float> whole = RunChunk(qkv, 0, kTokens, *whole_cache.sequence, &ref);

    // A prefill of 4, one of 3, then decode steps of 1, on pages of 3 positions.
    Cache stepped_cache = MakeCache(3, dtype);
    std::vector<float> stepped = RunChunk(qkv, 0, 4, *stepped_cache.sequence, &ref);
    for (const auto& [begin, count] :
         std::vector<std::pair<int64_t, int64_t>>{{4, 3}, {7, 1}, {8, 1}, {9, 1}, {10, 1}}) {
      const std::vector<float> chunk = RunChunk(qkv, begin, count, *stepped_cache.sequence, &ref);
      stepped.insert(stepped.end(), chunk.begin(), chunk.end());
    }
    // Same keys, same order, same arithmetic: identical, not just close.
    EXPECT_EQ(stepped, whole) << DTypeName(dtype);
  }
}

// One run may carry the tokens of several sequences (each token names its own, and its position
// is within it): the tokens of two sequences, interleaved in one run, get exactly what each
// sequence's tokens get in a run of their own. (The cpu backend against ref on such runs:
// tests/backend_consistency_test.cpp.)
TEST(RefAttention, TwoSequencesInOneRunEqualEachSequenceAlone) {
  const Qkv qkv = RandomQkv();
  RefBackend ref;
  Backend* backend = &ref;
  // Alone: sequence A holds tokens 0..4, sequence B tokens 5..9, both at positions 0..4.
  Cache a = MakeCache(3, DType::kF16);
  Cache b = MakeCache(3, DType::kF16);
  const std::vector<float> alone_a = RunChunk(qkv, 0, 5, *a.sequence, backend);
  std::vector<float> alone_b;
  {
    Qkv shifted = qkv;  // tokens 5..9 moved to the front, so that they sit at positions 0..4
    auto shift = [](std::vector<float>& x, int64_t heads) {
      x.erase(x.begin(), x.begin() + 5 * heads * kDim);
    };
    shift(shifted.q, kQHeads);
    shift(shifted.k, kKvHeads);
    shift(shifted.v, kKvHeads);
    alone_b = RunChunk(shifted, 0, 5, *b.sequence, backend);
  }

  // Together, interleaved A B A B ...: token i of the run is token i/2 of A or of B.
  Cache together = MakeCache(3, DType::kF16);
  KvSequence second(together.pool.get());
  ASSERT_TRUE(together.sequence->Resize(5));
  ASSERT_TRUE(second.Resize(5));
  std::vector<float> q, k, v;
  std::vector<int32_t> positions, sequence_of;
  for (int64_t i = 0; i < 10; ++i) {
    const int64_t token = i % 2 == 0 ? i / 2 : 5 + i / 2;
    q.insert(q.end(), qkv.q.begin() + token * kQHeads * kDim,
             qkv.q.begin() + (token + 1) * kQHeads * kDim);
    k.insert(k.end(), qkv.k.begin() + token * kKvHeads * kDim,
             qkv.k.begin() + (token + 1) * kKvHeads * kDim);
    v.insert(v.end(), qkv.v.begin() + token * kKvHeads * kDim,
             qkv.v.begin() + (token + 1) * kKvHeads * kDim);
    positions.push_back(static_cast<int32_t>(i / 2));
    sequence_of.push_back(static_cast<int32_t>(i % 2));
  }
  testing::GraphRunner graph = AttentionGraph(10, backend);
  ASSERT_TRUE(graph.SetInput("q", q));
  ASSERT_TRUE(graph.SetInput("k", k));
  ASSERT_TRUE(graph.SetInput("v", v));
  ASSERT_TRUE(graph.SetInput("positions", positions));
  const KvSequenceView sequences[2] = {together.sequence->view(), second.view()};
  const KvCacheView view{.sequences = sequences, .token_sequence = sequence_of};
  const Status run = graph.Run(&view);
  ASSERT_TRUE(run.has_value()) << run.error().message;
  const std::span<const float> out = *graph.OutputF32(0);  // [10, kQHeads, kDim]
  const int64_t row = kQHeads * kDim;
  for (int64_t i = 0; i < 10; ++i) {
    const std::vector<float>& alone = i % 2 == 0 ? alone_a : alone_b;
    const std::vector<float> got(out.begin() + i * row, out.begin() + (i + 1) * row);
    const std::vector<float> want(alone.begin() + i / 2 * row, alone.begin() + (i / 2 + 1) * row);
    EXPECT_EQ(got, want) << "token " << i;
  }
}

TEST(RefAttention, FirstTokenAttendsOnlyToItself) {
  // With one key the softmax weight is 1: the output of every query head is its kv head's v.
  const Qkv qkv = RandomQkv();
  RefBackend ref;
  Cache cache = MakeCache(4, DType::kF32);
  const std::vector<float> out = RunChunk(qkv, 0, 1, *cache.sequence, &ref);
  for (int64_t h = 0; h < kQHeads; ++h) {
    const int64_t kv_head = h / (kQHeads / kKvHeads);
    for (int64_t i = 0; i < kDim; ++i) {
      EXPECT_FLOAT_EQ(out[h * kDim + i], qkv.v[kv_head * kDim + i]) << h << " " << i;
    }
  }
}

// A q8_0 cache: ref's attention is attention over the keys and values as ggml's q8_0 holds them.
// The expectation is computed here, plainly: quantize k and v with the tensor layer's
// quantizer, dequantize, then out = softmax(scale · q kᵀ) v per query head in double.
TEST(RefAttention, Q8_0CacheAttendsToTheDequantizedKeysAndValues) {
  constexpr int64_t kT = 9, kHq = 4, kHkv = 2, kD = 64;  // two blocks a head, GQA 2:1
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  std::vector<float> q(kT * kHq * kD), k(kT * kHkv * kD), v(kT * kHkv * kD);
  for (std::vector<float>* x : {&q, &k, &v}) {
    for (float& e : *x) e = dist(rng);
  }
  for (int64_t i = 0; i < kD; ++i) k[3 * kHkv * kD + i] *= 40.0f;  // a block far from the rest

  const float scale = 1.0f / std::sqrt(float{kD});
  GraphBuilder b;
  const ValueId qi = *b.Input("q", DType::kF32, {kT, kHq, kD});
  const ValueId ki = *b.Input("k", DType::kF32, {kT, kHkv, kD});
  const ValueId vi = *b.Input("v", DType::kF32, {kT, kHkv, kD});
  const ValueId positions = *b.Input("positions", DType::kI32, {kT});
  ASSERT_TRUE(b.MarkOutput(*b.Attention("attn", qi, ki, vi, positions, {.layer = 0, .scale = scale})));
  RefBackend ref;
  Backend* backends[] = {&ref};
  testing::GraphRunner graph =
      *testing::GraphRunner::Compile(*std::move(b).Finish(), backends);
  std::vector<int32_t> pos(kT);
  for (int64_t t = 0; t < kT; ++t) pos[t] = static_cast<int32_t>(t);
  ASSERT_TRUE(graph.SetInput("q", q));
  ASSERT_TRUE(graph.SetInput("k", k));
  ASSERT_TRUE(graph.SetInput("v", v));
  ASSERT_TRUE(graph.SetInput("positions", pos));
  testing::KvCache cache = *testing::KvCache::Create({.n_layers = 1,
                                                      .n_kv_heads = kHkv,
                                                      .head_dim = kD,
                                                      .page_size = 4,
                                                      .n_pages = 3,
                                                      .dtype = DType::kQ8_0});
  ASSERT_TRUE(cache.Resize(kT));
  const KvCacheView view = cache.view();
  const Status ran = graph.Run(&view);
  ASSERT_TRUE(ran.has_value()) << ran.error().message;
  const std::span<const float> out = *graph.OutputF32(0);

  auto round_trip = [](const std::vector<float>& x) {
    std::vector<std::byte> blocks(x.size() / 32 * 34);
    EXPECT_TRUE(Quantize(DType::kQ8_0, x.data(), blocks.data(), static_cast<int64_t>(x.size())));
    std::vector<float> y(x.size());
    EXPECT_TRUE(Dequantize(DType::kQ8_0, blocks.data(), y.data(), static_cast<int64_t>(x.size())));
    return y;
  };
  const std::vector<float> kq = round_trip(k), vq = round_trip(v);
  ASSERT_NE(kq, k);  // the quantization is visible
  double largest_change = 0;
  for (int64_t t = 0; t < kT; ++t) {
    for (int64_t h = 0; h < kHq; ++h) {
      const int64_t g = h / (kHq / kHkv);
      std::vector<double> w(t + 1);
      double max = -1e300, sum = 0;
      for (int64_t j = 0; j <= t; ++j) {
        double dot = 0;
        for (int64_t i = 0; i < kD; ++i) dot += q[(t * kHq + h) * kD + i] * kq[(j * kHkv + g) * kD + i];
        w[j] = scale * dot;
        max = std::max(max, w[j]);
      }
      for (double& x : w) sum += (x = std::exp(x - max));
      for (int64_t i = 0; i < kD; ++i) {
        double expected = 0, unquantized = 0;
        for (int64_t j = 0; j <= t; ++j) expected += w[j] / sum * vq[(j * kHkv + g) * kD + i];
        for (int64_t j = 0; j <= t; ++j) unquantized += w[j] / sum * v[(j * kHkv + g) * kD + i];
        const float got = out[(t * kHq + h) * kD + i];
        EXPECT_NEAR(got, expected, 1e-6) << "t=" << t << " h=" << h << " i=" << i;
        largest_change = std::max(largest_change, std::fabs(expected - unquantized));
      }
    }
  }
  EXPECT_GT(largest_change, 1e-4);  // the test would see f32 values used in place of q8_0
  // The cache holds exactly the quantizer's blocks (token 3's k: the far block).
  std::vector<std::byte> row(kHkv * kD / 32 * 34);
  ASSERT_TRUE(Quantize(DType::kQ8_0, k.data() + 3 * kHkv * kD, row.data(), kHkv * kD));
  EXPECT_EQ(std::memcmp(view.layer(3, 0).key(3), row.data(), row.size()), 0);
}

TEST(RefAttention, RunTimeMisuseIsAnError) {
  const Qkv qkv = RandomQkv();
  RefBackend ref;
  testing::GraphRunner graph = AttentionGraph(2, &ref);
  ASSERT_TRUE(graph.SetInput("q", std::vector<float>(qkv.q.begin(), qkv.q.begin() + 64)));
  ASSERT_TRUE(graph.SetInput("k", std::vector<float>(qkv.k.begin(), qkv.k.begin() + 32)));
  ASSERT_TRUE(graph.SetInput("v", std::vector<float>(qkv.v.begin(), qkv.v.begin() + 32)));
  ASSERT_TRUE(graph.SetInput("positions", std::vector<int32_t>{3, 4}));

  Status run = graph.Run(nullptr);
  ASSERT_FALSE(run.has_value());
  EXPECT_NE(run.error().message.find("needs a KV cache"), std::string::npos);

  Cache cache = MakeCache(4, DType::kF16);
  ASSERT_TRUE(cache.sequence->Resize(4));  // position 4 is past the valid length
  KvCacheView view = cache.sequence->batch_view();
  run = graph.Run(&view);
  ASSERT_FALSE(run.has_value());
  EXPECT_EQ(run.error().message,
            "node 'attn' (attention) on ref: position 4 of token 1 is outside the KV cache's "
            "valid length 4");

  Cache one_layer = MakeCache(4, DType::kF32, /*layers=*/1);
  ASSERT_TRUE(one_layer.sequence->Resize(5));
  view = one_layer.sequence->batch_view();
  run = graph.Run(&view);
  ASSERT_FALSE(run.has_value());
  EXPECT_NE(run.error().message.find("layer 1 is past the KV cache's 1 layers"), std::string::npos);

  testing::KvCache wrong_heads = *testing::KvCache::Create({.n_layers = 2,
                                                            .n_kv_heads = 1,
                                                            .head_dim = kDim,
                                                            .page_size = 4,
                                                            .n_pages = 8,
                                                            .dtype = DType::kF32});
  ASSERT_TRUE(wrong_heads.Resize(5));
  view = wrong_heads.view();
  EXPECT_FALSE(graph.Run(&view).has_value());

  // Each token must name one of the run's sequences.
  const int32_t past_the_sequences[2] = {0, 1};
  view = cache.sequence->batch_view();
  ASSERT_TRUE(cache.sequence->Resize(5));
  view = cache.sequence->batch_view();
  view.token_sequence = past_the_sequences;
  run = graph.Run(&view);
  ASSERT_FALSE(run.has_value());
  EXPECT_NE(run.error().message.find("token 1 is in sequence 1; the run has 1 sequences"),
            std::string::npos)
      << run.error().message;
}

}  // namespace
}  // namespace kite
