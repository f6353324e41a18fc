#include "quant/mix_search.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace kite {
namespace {

// The best choice by trying every combination.
double BestError(const std::vector<MixTensor>& tensors, uint64_t budget) {
  double best = std::numeric_limits<double>::infinity();
  std::vector<size_t> pick(tensors.size(), 0);
  while (true) {
    uint64_t bytes = 0;
    double error = 0;
    for (size_t t = 0; t < tensors.size(); ++t) {
      bytes += tensors[t].candidates[pick[t]].bytes;
      error += tensors[t].candidates[pick[t]].error;
    }
    if (bytes <= budget) best = std::min(best, error);
    size_t t = 0;
    while (t < tensors.size() && ++pick[t] == tensors[t].candidates.size()) pick[t++] = 0;
    if (t == tensors.size()) return best;
  }
}

TEST(MixSearchTest, GreedyFitsTheBudgetAndMatchesTheOptimumOnAConvexFrontier) {
  // Errors halve per extra bit: a convex frontier, where greedy by error per byte is optimal.
  std::vector<MixTensor> tensors;
  for (int t = 0; t < 4; ++t) {
    MixTensor tensor{"w" + std::to_string(t), {}};
    const double scale = 1.0 + t * t;  // some weights are more sensitive than others
    for (int bits = 2; bits <= 8; bits += 2) {
      tensor.candidates.push_back(
          {DType::kQ8_0, static_cast<uint64_t>(100 * bits), scale * std::pow(0.25, bits)});
    }
    tensors.push_back(tensor);
  }
  for (uint64_t budget : {800u, 1000u, 1400u, 2000u, 3200u}) {
    auto picks = SolveMix(tensors, budget, "--target-size");
    ASSERT_TRUE(picks.has_value());
    uint64_t bytes = 0;
    double error = 0;
    for (size_t t = 0; t < tensors.size(); ++t) {
      bytes += tensors[t].candidates[(*picks)[t]].bytes;
      error += tensors[t].candidates[(*picks)[t]].error;
    }
    EXPECT_LE(bytes, budget);
    EXPECT_NEAR(error, BestError(tensors, budget), 1e-12) << budget;
  }
  auto infeasible = SolveMix(tensors, 799, "--target-bpw");
  ASSERT_FALSE(infeasible.has_value());
  EXPECT_NE(infeasible.error().message.find("--target-bpw: infeasible"), std::string::npos);
}

TEST(MixSearchTest, MeasuredErrorFallsWithMoreBitsAndFollowsTheImportance) {
  const int64_t rows = 8, columns = 256;
  std::vector<float> weights(rows * columns);
  for (size_t i = 0; i < weights.size(); ++i)
    weights[i] = std::sin(0.37f * i) + (i % 97 == 0 ? 4 : 0);
  const ReadRow read = [&](int64_t row, float* out) {
    std::copy_n(weights.data() + row * columns, columns, out);
    return Ok();
  };
  const std::vector<DType> types = MixCandidateTypes(columns);
  auto plain = MeasureCandidates(read, rows, columns, nullptr, types);
  ASSERT_TRUE(plain.has_value()) << plain.error().message;
  ASSERT_GE(plain->size(), 4u);
  EXPECT_EQ(plain->front().dtype, DType::kQ2_K);
  EXPECT_EQ(plain->back().dtype, DType::kQ8_0);
  EXPECT_GT(plain->front().error, 10 * plain->back().error);
  EXPECT_EQ(plain->front().bytes, 8u * 84);  // q2_K: 84 bytes per 256
  // The error is weighted by the importance: 2 on every column doubles the error of 1 (the
  // quantizer's searches, importance-weighted, pick the same codes for any uniform weight).
  std::vector<float> ones(columns, 1.0f), twos(columns, 2.0f);
  auto unit = MeasureCandidates(read, rows, columns, ones.data(), types);
  auto weighted = MeasureCandidates(read, rows, columns, twos.data(), types);
  ASSERT_TRUE(unit.has_value() && weighted.has_value());
  for (size_t c = 0; c < unit->size(); ++c) {
    EXPECT_NEAR((*weighted)[c].error, 2 * (*unit)[c].error, 1e-9 * (*unit)[c].error + 1e-12)
        << DTypeName((*unit)[c].dtype);
  }
  EXPECT_TRUE(
      MixCandidateTypes(576) ==
      (std::vector<DType>{DType::kQ4_0, DType::kQ4_1, DType::kQ5_0, DType::kQ5_1, DType::kQ8_0}));
}

}  // namespace
}  // namespace kite
