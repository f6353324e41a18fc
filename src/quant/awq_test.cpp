#include "quant/awq.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <vector>

#include "quant/algo_fixture.h"
#include "quant/seqmse.h"

namespace kite {
namespace {

using testing::MakeOutlierLayer;
using testing::OutputError;

// AWQ's reported errors are the plain output errors of its weights (checked against the
// fixture's own computation), lower than round to nearest on a layer with outlier channels;
// the scales are mean|x|^α normalized, and the outlier channels get the largest.
TEST(AwqTest, LowersTheOutputErrorOfRoundToNearest) {
  const testing::OutlierLayer a = MakeOutlierLayer(24, 128, 256, 21);
  const testing::OutlierLayer b = MakeOutlierLayer(40, 128, 256, 22);  // b's rows, a's inputs
  ThreadPool pool(2);
  for (const char* name : {"int4", "int4_g32", "q4_0"}) {
    auto grid = MakeWeightGrid(name);
    const AwqLinear linears[] = {{"a", a.w, a.out}, {"b", b.w, b.out}};
    auto awq = Awq(linears, a.stats, **grid, {.max_samples = 0}, &pool);  // every row
    ASSERT_TRUE(awq) << awq.error().message;
    double rtn = 0, ours = 0;
    for (int i = 0; i < 2; ++i) {
      const testing::OutlierLayer& l = i == 0 ? a : b;
      rtn += OutputError(testing::Rtn(**grid, l.w, l.in), l.w, l.out, l.in, a.x, a.rows);
      // What the target quantizer makes of AWQ's weights, scaled back: Q(W·s)/s.
      std::vector<float> q = testing::Rtn(**grid, awq->weights[i], l.in);
      for (int64_t k = 0; k < l.out * l.in; ++k) q[k] /= awq->scale[k % l.in];
      ours += OutputError(q, l.w, l.out, l.in, a.x, a.rows);
    }
    EXPECT_NEAR(awq->rtn_error, rtn, 1e-3 * rtn) << name;
    // The clipped weights requantized by the target refit their scales to the clipped range:
    // the same values as AWQ scored.
    EXPECT_NEAR(awq->error, ours, 1e-2 * ours) << name;
    EXPECT_LT(ours, 0.7 * rtn) << name << ": rtn " << rtn << " awq " << ours << " alpha "
                               << awq->alpha;
    EXPECT_GT(awq->alpha, 0.0f) << name;
    const int64_t outlier = 128 - 3;  // the 100x channel
    for (int64_t j = 0; j < 128; ++j) EXPECT_LE(awq->scale[j], awq->scale[outlier]) << j;
  }
}

// On inputs with no outliers and a grid that loses nothing (int8), AWQ never does worse than
// round to nearest (α = 0 and clip 1 are candidates).
TEST(AwqTest, NeverWorseThanRoundToNearestOnItsSamples) {
  const testing::OutlierLayer l = MakeOutlierLayer(16, 64, 128, 5);
  auto grid = MakeWeightGrid("int8");
  const AwqLinear linears[] = {{"w", l.w, l.out}};
  auto awq = Awq(linears, l.stats, **grid, {}, nullptr);
  ASSERT_TRUE(awq);
  EXPECT_LE(awq->error, awq->rtn_error);
}

TEST(AwqTest, RefusesStatisticsWithoutSamples) {
  const testing::OutlierLayer l = MakeOutlierLayer(4, 64, 16, 5);
  LinearInputStats stats = l.stats;
  stats.samples.clear();
  stats.samples_rows = 0;
  auto grid = MakeWeightGrid("int4");
  const AwqLinear linears[] = {{"blk.0.ffn_up.weight", l.w, l.out}};
  auto awq = Awq(linears, stats, **grid, {}, nullptr);
  ASSERT_FALSE(awq);
  EXPECT_NE(awq.error().message.find("blk.0.ffn_up.weight"), std::string::npos);
  EXPECT_NE(awq.error().message.find("samples"), std::string::npos);
}

}  // namespace
}  // namespace kite

namespace kite {
namespace {

// The 1B model's largest AWQ site (ffn_gate + ffn_up [8192, 2048] reading one input) and SeqMSE
// on ffn_down [2048, 8192], 512 sampled rows; run by hand: kite_quant_tests
// --gtest_also_run_disabled_tests --gtest_filter='*Speed*' (figures in the notes).
TEST(AwqTest, DISABLED_SpeedOfLlama1BShapes) {
  ThreadPool pool(0);
  testing::Gaussian g(1);
  auto stats_of = [&](int64_t in) {
    LinearInputStats s;
    s.columns = in;
    s.rows_seen = 512;
    s.samples_rows = 512;
    s.samples.resize(512 * in);
    for (float& v : s.samples) v = g();
    s.abs_sum.assign(in, 0.0);
    for (int64_t i = 0; i < 512 * in; ++i) s.abs_sum[i % in] += std::fabs(s.samples[i]);
    return s;
  };
  const LinearInputStats up_in = stats_of(2048), down_in = stats_of(8192);
  std::vector<float> gate(8192 * 2048), up(8192 * 2048), down(2048 * 8192);
  for (auto* w : {&gate, &up, &down}) {
    for (float& v : *w) v = 0.02f * g();
  }
  auto grid = MakeWeightGrid("int4_g32");
  const AwqLinear linears[] = {{"gate", gate, 8192}, {"up", up, 8192}};
  auto t0 = std::chrono::steady_clock::now();
  auto awq = Awq(linears, up_in, **grid, {}, &pool);
  ASSERT_TRUE(awq);
  auto t1 = std::chrono::steady_clock::now();
  auto seq = SeqMse("down", down, 2048, down_in, **grid, {}, &pool);
  ASSERT_TRUE(seq);
  auto t2 = std::chrono::steady_clock::now();
  std::printf(
      "AWQ gate+up [8192, 2048] x2: %.2f s; SeqMSE down [2048, 8192]: %.2f s (%d threads)\n",
      std::chrono::duration<double>(t1 - t0).count(),
      std::chrono::duration<double>(t2 - t1).count(), pool.size());
}

}  // namespace
}  // namespace kite
