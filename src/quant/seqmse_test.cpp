#include "quant/seqmse.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "quant/algo_fixture.h"

namespace kite {
namespace {

using testing::MakeOutlierLayer;
using testing::OutputError;

// Each row's chosen clip is the best of the candidates by a plain search written here, and the
// layer's output error is below round to nearest's.
TEST(SeqMseTest, PicksEachRowsBestClipAndLowersTheOutputError) {
  testing::OutlierLayer l = MakeOutlierLayer(16, 64, 128, 9);
  // A few more large weights: RTN's range is then set by one value per row.
  for (int64_t r = 0; r < l.out; r += 3) l.w[r * l.in + (r * 7) % l.in] = 0.6f;
  ThreadPool pool(2);
  for (const char* name : {"int4", "int4_asym", "int4_g32"}) {
    auto grid = MakeWeightGrid(name);
    auto seq = SeqMse("w", l.w, l.out, l.stats, **grid, {}, &pool);
    ASSERT_TRUE(seq) << seq.error().message;
    const std::vector<float> ratios = ClipRatios(20, 0.5f);
    ASSERT_EQ(ratios.size(), 20u);
    EXPECT_FLOAT_EQ(ratios.front(), 1.0f);
    EXPECT_FLOAT_EQ(ratios.back(), 0.5f);
    for (int64_t r = 0; r < l.out; ++r) {
      double best = std::numeric_limits<double>::infinity();
      float best_ratio = 0;
      for (float ratio : ratios) {
        std::vector<float> q(l.w.begin() + r * l.in, l.w.begin() + (r + 1) * l.in);
        (*grid)->QuantizeRow(q, ratio);
        const double e =
            OutputError(q, std::span(l.w).subspan(r * l.in, l.in), 1, l.in, l.x, l.rows);
        if (e < best * (1 - 1e-9)) {
          best = e;
          best_ratio = ratio;
        }
      }
      EXPECT_EQ(seq->ratio[r], best_ratio) << name << " row " << r;
    }
    const double rtn = OutputError(testing::Rtn(**grid, l.w, l.in), l.w, l.out, l.in, l.x, l.rows);
    const double ours = OutputError(seq->quantized, l.w, l.out, l.in, l.x, l.rows);
    EXPECT_LT(ours, 0.9 * rtn) << name << ": rtn " << rtn << " seqmse " << ours;
  }
}

TEST(SeqMseTest, RefusesABadCandidateGrid) {
  const testing::OutlierLayer l = MakeOutlierLayer(4, 64, 16, 5);
  auto grid = MakeWeightGrid("int4");
  auto bad =
      SeqMse("blk.1.attn_v.weight", l.w, l.out, l.stats, **grid, {.lowest_ratio = 0.0f}, nullptr);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("blk.1.attn_v.weight"), std::string::npos);
}

}  // namespace
}  // namespace kite
