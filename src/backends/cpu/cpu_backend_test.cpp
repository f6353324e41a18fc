#include "backends/cpu/cpu_backend.h"

#include <gtest/gtest.h>

#include <optional>
#include <vector>

#include "backends/ref/ref_backend.h"
#include "backends/testing.h"
#include "graph/builder.h"
#include "runtime/testing.h"

namespace kite {
namespace {

constexpr int64_t kN = 64, kK = 64, kTokens = 3;

using testing::Random;

// y = x · Wᵀ with W [kN, kK] f32 under weight id `id`.
Graph MatMulGraph(const std::vector<float>& w, uint64_t id) {
  GraphBuilder b;
  const ValueId x = *b.Input("x", DType::kF32, {kTokens, kK});
  const ValueId weight = *b.Weight({.name = "w",
                                    .dtype = DType::kF32,
                                    .shape = {kN, kK},
                                    .data = w.data(),
                                    .bytes = w.size() * sizeof(float),
                                    .id = id});
  EXPECT_TRUE(b.MarkOutput(*b.MatMul("y", x, weight)));
  return *std::move(b).Finish();
}

std::vector<float> RunOn(Graph graph, Backend& backend, const std::vector<float>& x) {
  Backend* backends[] = {&backend};
  auto runner = testing::GraphRunner::Compile(std::move(graph), backends);
  EXPECT_TRUE(runner.has_value()) << runner.error().message;
  if (!runner) return {};
  EXPECT_TRUE(runner->SetInput("x", x));
  const Status ran = runner->Run();
  EXPECT_TRUE(ran.has_value()) << ran.error().message;
  const std::span<const float> out = *runner->OutputF32(0);
  return {out.begin(), out.end()};
}

// Graphs that read one weight (one id) share its packed copy; it lives while one of them does.
TEST(CpuBackend, PackedWeightsAreSharedByIdAndLiveWithTheirPartitions) {
  const std::vector<float> w = Random(kN * kK, 1);
  CpuBackend cpu(1);
  Backend* backends[] = {&cpu};
  auto compiled = testing::GraphRunner::Compile(MatMulGraph(w, 1001), backends);
  ASSERT_TRUE(compiled.has_value()) << compiled.error().message;
  std::optional<testing::GraphRunner> first(std::move(*compiled));
  const uint64_t one = cpu.packed_bytes();
  EXPECT_GE(one, uint64_t{kN * kK * sizeof(float)});
  {
    auto second = testing::GraphRunner::Compile(MatMulGraph(w, 1001), backends);
    ASSERT_TRUE(second.has_value()) << second.error().message;
    EXPECT_EQ(cpu.packed_bytes(), one);  // shared, not packed again
    auto other = testing::GraphRunner::Compile(MatMulGraph(w, 1002), backends);
    ASSERT_TRUE(other.has_value()) << other.error().message;
    EXPECT_EQ(cpu.packed_bytes(), 2 * one);  // another id: another weight
  }
  EXPECT_EQ(cpu.packed_bytes(), one);
  first.reset();
  EXPECT_EQ(cpu.packed_bytes(), 0u);
}

// A weight rewritten in place (same address) is a new weight with a new id: the cpu packs the
// new bytes, even when the edit leaves the first and last bytes alone (a packed copy found by
// address and a fingerprint of the edges ran on the stale bytes).
TEST(CpuBackend, AWeightRewrittenUnderANewIdIsPackedAgain) {
  std::vector<float> w = Random(kN * kK, 2);
  const std::vector<float> x = Random(kTokens * kK, 3);
  CpuBackend cpu(1);
  RefBackend ref;
  Backend* backends[] = {&cpu};
  auto before = testing::GraphRunner::Compile(MatMulGraph(w, 2001), backends);
  ASSERT_TRUE(before.has_value()) << before.error().message;  // keeps the old copy alive

  for (int64_t i = kN * kK / 4; i < 3 * kN * kK / 4; ++i) w[i] = -2.0f * w[i] + 0.25f;
  const std::vector<float> got = RunOn(MatMulGraph(w, 2002), cpu, x);
  const std::vector<float> want = RunOn(MatMulGraph(w, 2002), ref, x);
  testing::ExpectClose(got, want, 1e-5, 1e-5, "cpu after the rewrite");
}

}  // namespace
}  // namespace kite
