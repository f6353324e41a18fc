// A batched decode step's promise at the kernel level: on the cpu backend each token's row of a
// matmul of T tokens (T < kStreamTokens) and of an attention run that carries one token of each
// of several sequences has the same bits as that token run alone (T = 1), so a server's greedy
// output never depends on how many streams share a step.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "backends/cpu/amx.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/matmul_kernels.h"
#include "backends/ref/ref_backend.h"
#include "backends/registry.h"
#include "backends/testing.h"
#include "graph/builder.h"
#include "runtime/testing.h"
#include "tensor/quantize.h"

namespace kite {
namespace {

using testing::Random;

// out [T, N] of x [T, K] · Wᵀ on the cpu backend (2 threads).
std::vector<float> MatMul(const std::vector<uint8_t>& w, DType dtype, int64_t n, int64_t k,
                          const std::vector<float>& x) {
  const int64_t tokens = static_cast<int64_t>(x.size()) / k;
  GraphBuilder b;
  const ValueId xv = *b.Input("x", DType::kF32, {tokens, k});
  const ValueId wv = *b.Weight(
      {.name = "w", .dtype = dtype, .shape = {n, k}, .data = w.data(), .bytes = w.size()});
  EXPECT_TRUE(b.MarkOutput(*b.MatMul("y", xv, wv)));
  CpuBackend cpu(2);
  Backend* backends[] = {&cpu};
  auto runner = testing::GraphRunner::Compile(*std::move(b).Finish(), backends);
  EXPECT_TRUE(runner.has_value()) << runner.error().message;
  if (!runner) return {};
  EXPECT_TRUE(runner->SetInput("x", x));
  EXPECT_TRUE(runner->Run().has_value());
  const std::span<const float> out = *runner->OutputF32(0);
  return {out.begin(), out.end()};
}

// Every kernel family: float (f32, f16, bf16), legacy blocks (q8_0, q4_0, q4_1, iq4_nl) and
// k-quants (q4_K, q5_K, q6_K, iq4_xs). N = 300 is 19 row groups: chunks of 8 groups, the last of
// 3, so both the decode tile's groups side by side and its single groups are covered.
TEST(CpuBatchRows, MatMulRowsOfSeveralTokensAreTheBitsOfOneToken) {
  const DType types[] = {DType::kF32,  DType::kF16,  DType::kBF16,   DType::kQ8_0,
                         DType::kQ4_0, DType::kQ4_1, DType::kIQ4_NL, DType::kQ4_K,
                         DType::kQ5_K, DType::kQ6_K, DType::kIQ4_XS};
  constexpr int64_t kN = 300, kK = 512;
  uint32_t seed = 1;
  for (const DType dtype : types) {
    std::vector<float> w_f32 = Random(kN * kK, seed++);
    for (int64_t r = 0; r < kN; ++r) w_f32[r * kK + (r * 7) % kK] *= 4;  // scales differ
    std::vector<uint8_t> w(*BytesFor(dtype, kN * kK));
    ASSERT_TRUE(Quantize(dtype, w_f32.data(), w.data(), kN * kK).has_value());
    for (const int64_t tokens : {2, 3, 5, 8, 9, 16, static_cast<int>(cpu::kStreamTokens) - 1}) {
      SCOPED_TRACE(std::string(DTypeName(dtype)) + " T=" + std::to_string(tokens));
      const std::vector<float> x = Random(tokens * kK, seed++);
      const std::vector<float> batched = MatMul(w, dtype, kN, kK, x);
      ASSERT_EQ(batched.size(), static_cast<size_t>(tokens * kN));
      for (int64_t t = 0; t < tokens; ++t) {
        const std::vector<float> row(x.begin() + t * kK, x.begin() + (t + 1) * kK);
        const std::vector<float> alone = MatMul(w, dtype, kN, kK, row);
        ASSERT_EQ(std::memcmp(batched.data() + t * kN, alone.data(), kN * sizeof(float)), 0)
            << "token " << t;
      }
    }
  }
}

// A prefill of integer weights (kStreamTokens tokens or more) on a CPU with AMX takes its bf16
// tiles, whose rows are not decode's bits; a cpu backend made with BackendOptions::amx off
// (`--no-amx`) keeps prefills on the int8 kernels, whose rows are (without AMX they run anyway).
TEST(CpuBatchRows, WithoutAmxAnIntegerPrefillsRowsAreTheBitsOfOneToken) {
  struct AllowAmxAtTheEnd {  // for the tests after this one, however this one ends
    ~AllowAmxAtTheEnd() { cpu::amx_bf16_allowed = true; }
  } allow_amx_at_the_end;
  auto backends = MakeBackends("cpu", {.threads = 2, .amx = false});
  ASSERT_TRUE(backends.has_value()) << backends.error().message;
  EXPECT_FALSE(cpu::UseAmxBf16());
  constexpr int64_t kN = 40, kK = 256, kTokens = 40;
  uint32_t seed = 100;
  for (const DType dtype : {DType::kQ4_0, DType::kQ4_K, DType::kQ6_K}) {
    SCOPED_TRACE(DTypeName(dtype));
    const std::vector<float> w_f32 = Random(kN * kK, seed++);
    std::vector<uint8_t> w(*BytesFor(dtype, kN * kK));
    ASSERT_TRUE(Quantize(dtype, w_f32.data(), w.data(), kN * kK).has_value());
    const std::vector<float> x = Random(kTokens * kK, seed++);
    const std::vector<float> prefill = MatMul(w, dtype, kN, kK, x);
    ASSERT_EQ(prefill.size(), static_cast<size_t>(kTokens * kN));
    for (int64_t t = 0; t < kTokens; ++t) {
      const std::vector<float> row(x.begin() + t * kK, x.begin() + (t + 1) * kK);
      const std::vector<float> alone = MatMul(w, dtype, kN, kK, row);
      ASSERT_EQ(std::memcmp(prefill.data() + t * kN, alone.data(), kN * sizeof(float)), 0)
          << "token " << t;
    }
  }
}

// Five sequences with histories of different lengths (long enough for the threads to share the
// step), one new token each in one run: each output row is the bits of that token's run alone,
// and near ref's.
TEST(CpuBatchRows, AttentionOfOneTokenPerSequenceIsTheBitsOfEachAlone) {
  constexpr int64_t kHeads = 8, kKvHeads = 2, kDim = 64, kSequences = 5;
  const int32_t lengths[kSequences] = {300, 7, 129, 64, 1};
  for (const DType kv : {DType::kF16, DType::kQ8_0}) {
    SCOPED_TRACE(std::string("KV ") + std::string(DTypeName(kv)));
    auto pool = KvPool::Create({.n_layers = 1,
                                .n_kv_heads = kKvHeads,
                                .head_dim = kDim,
                                .page_size = 16,
                                .n_pages = 64,
                                .dtype = kv});
    ASSERT_TRUE(pool.has_value()) << pool.error().message;
    std::vector<std::unique_ptr<KvSequence>> sequences;
    std::vector<KvSequenceView> views;
    std::vector<int32_t> positions;
    uint32_t seed = 100;
    for (int32_t length : lengths) {
      sequences.push_back(std::make_unique<KvSequence>(pool->get()));
      ASSERT_TRUE(sequences.back()->Resize(length + 1).has_value());
      // The history: random rows written straight into the pages.
      const KvLayerView& layer = sequences.back()->view().layers[0];
      for (int32_t p = 0; p < length; ++p) {
        const std::vector<float> k = Random(kKvHeads * kDim, seed++, -2, 2);
        const std::vector<float> v = Random(kKvHeads * kDim, seed++, -2, 2);
        ASSERT_TRUE(Quantize(kv, k.data(), layer.key(p), kKvHeads * kDim).has_value());
        ASSERT_TRUE(Quantize(kv, v.data(), layer.value(p), kKvHeads * kDim).has_value());
      }
      views.push_back(sequences.back()->view());
      positions.push_back(length);
    }
    const std::vector<float> q = Random(kSequences * kHeads * kDim, 1, -2, 2);
    const std::vector<float> k = Random(kSequences * kKvHeads * kDim, 2, -2, 2);
    const std::vector<float> v = Random(kSequences * kKvHeads * kDim, 3, -2, 2);

    // Tokens [first, first + count) of the step through one graph run on `backend`.
    auto run = [&](Backend& backend, int64_t first, int64_t count) {
      GraphBuilder b;
      const ValueId qv = *b.Input("q", DType::kF32, {count, kHeads, kDim});
      const ValueId kv_in = *b.Input("k", DType::kF32, {count, kKvHeads, kDim});
      const ValueId vv = *b.Input("v", DType::kF32, {count, kKvHeads, kDim});
      const ValueId pv = *b.Input("positions", DType::kI32, {count});
      EXPECT_TRUE(
          b.MarkOutput(*b.Attention("attn", qv, kv_in, vv, pv, {.layer = 0, .scale = 0.125f})));
      Backend* backends[] = {&backend};
      auto runner = testing::GraphRunner::Compile(*std::move(b).Finish(), backends);
      EXPECT_TRUE(runner.has_value());
      auto slice = [&](const std::vector<float>& all, int64_t per) {
        return std::vector<float>(all.begin() + first * per, all.begin() + (first + count) * per);
      };
      EXPECT_TRUE(runner->SetInput("q", slice(q, kHeads * kDim)));
      EXPECT_TRUE(runner->SetInput("k", slice(k, kKvHeads * kDim)));
      EXPECT_TRUE(runner->SetInput("v", slice(v, kKvHeads * kDim)));
      EXPECT_TRUE(runner->SetInput(
          "positions",
          std::vector<int32_t>(positions.begin() + first, positions.begin() + first + count)));
      std::vector<int32_t> token_sequence(count);
      for (int64_t t = 0; t < count; ++t) token_sequence[t] = static_cast<int32_t>(t);
      const KvCacheView view{.sequences = std::span(views).subspan(first, count),
                             .token_sequence = token_sequence};
      const Status ran = runner->Run(&view);
      EXPECT_TRUE(ran.has_value()) << ran.error().message;
      const std::span<const float> out = *runner->OutputF32(0);
      return std::vector<float>(out.begin(), out.end());
    };
    CpuBackend cpu(2);
    RefBackend ref;
    const std::vector<float> batched = run(cpu, 0, kSequences);
    const std::vector<float> by_ref = run(ref, 0, kSequences);
    ASSERT_EQ(batched.size(), static_cast<size_t>(kSequences * kHeads * kDim));
    for (size_t i = 0; i < batched.size(); ++i) {
      ASSERT_NEAR(batched[i], by_ref[i], 2e-5) << "output " << i;
    }
    for (int64_t s = 0; s < kSequences; ++s) {
      const std::vector<float> alone = run(cpu, s, 1);
      EXPECT_EQ(std::memcmp(batched.data() + s * kHeads * kDim, alone.data(),
                            kHeads * kDim * sizeof(float)),
                0)
          << "sequence " << s;
    }
  }
}

}  // namespace
}  // namespace kite
