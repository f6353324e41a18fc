// The acceptance rule against its defining property: whatever the draft's distribution q, the
// tokens that come out are distributed as the target's p. Checked by a chi-square test over many
// draws on toy distributions; the same test rejects the naive rule (keep the draft with
// probability p(d), else draw from p), so it can fail.
#include "runtime/speculative_accept.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace kite {
namespace {

constexpr int kDraws = 200000;
// The chi-square statistic's 99.9% quantile for 5 degrees of freedom (six tokens): a correct
// rule exceeds it once in a thousand seeds; the seeds are fixed, so the test is deterministic.
constexpr double kChiSquare999 = 20.52;

const std::vector<TokenProb> kP = {{0, 0.40f}, {1, 0.25f}, {2, 0.15f},
                                   {3, 0.10f}, {4, 0.07f}, {5, 0.03f}};
// A draft that disagrees: most mass where p has little, and token 0 missing.
const std::vector<TokenProb> kQ = {{5, 0.35f}, {4, 0.25f}, {3, 0.2f}, {1, 0.15f}, {2, 0.05f}};

double Uniform(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

int32_t DrawFrom(const std::vector<TokenProb>& distribution, double u) {
  double cumulative = 0.0;
  for (const TokenProb& token : distribution) {
    cumulative += token.prob;
    if (u < cumulative) return token.id;
  }
  return distribution.back().id;
}

// Pearson's statistic of `counts` against `expected` probabilities over kDraws draws.
double ChiSquare(const std::vector<int>& counts, const std::vector<TokenProb>& expected) {
  double statistic = 0.0;
  for (const TokenProb& token : expected) {
    const double e = token.prob * kDraws;
    const double d = counts[token.id] - e;
    statistic += d * d / e;
  }
  return statistic;
}

// Draws kDraws tokens speculatively: a draft from q (or `fixed_draft` when q is empty), judged by
// `judge`; returns the counts per token id.
template <typename Judge>
std::vector<int> Counts(const std::vector<TokenProb>& q, int32_t fixed_draft, Judge judge) {
  std::mt19937_64 rng(1234);
  std::vector<int> counts(kP.size(), 0);
  for (int i = 0; i < kDraws; ++i) {
    const int32_t draft = q.empty() ? fixed_draft : DrawFrom(q, Uniform(rng));
    const double u_accept = Uniform(rng);
    const double u_resample = Uniform(rng);
    ++counts[judge(draft, u_accept, u_resample)];
  }
  return counts;
}

TEST(AcceptanceRule, DraftModelTokensComeOutDistributedAsTheTarget) {
  AcceptanceRule rule;
  const std::vector<int> counts = Counts(kQ, -1, [&](int32_t d, double a, double r) {
    return rule.Judge(kP, kQ, d, a, r).token;
  });
  EXPECT_LT(ChiSquare(counts, kP), kChiSquare999);
}

TEST(AcceptanceRule, CertainDraftsComeOutDistributedAsTheTarget) {
  AcceptanceRule rule;
  // An n-gram draft is a point mass; the draft token is the target's second choice.
  const std::vector<int> counts = Counts({}, 1, [&](int32_t d, double a, double r) {
    return rule.Judge(kP, {}, d, a, r).token;
  });
  EXPECT_LT(ChiSquare(counts, kP), kChiSquare999);
  // And a draft the target cannot give is never kept.
  EXPECT_FALSE(rule.Judge(kP, {}, 7, 0.0, 0.5).accepted);
}

TEST(AcceptanceRule, TheNaiveRuleFailsTheSameTest) {
  // Keep the draft with probability p(d), else draw from p: d comes out too often.
  auto naive = [](int32_t d, double a, double r) {
    for (const TokenProb& token : kP) {
      if (token.id == d && a < token.prob) return d;
    }
    return DrawFrom(kP, r);
  };
  EXPECT_GT(ChiSquare(Counts(kQ, -1, naive), kP), 10 * kChiSquare999);
  EXPECT_GT(ChiSquare(Counts({}, 1, naive), kP), 10 * kChiSquare999);
}

TEST(AcceptanceRule, GreedyTargetKeepsOnlyTheArgmax) {
  AcceptanceRule rule;
  const std::vector<TokenProb> argmax = {{3, 1.0f}};
  EXPECT_TRUE(rule.Judge(argmax, {}, 3, 0.99, 0.5).accepted);
  const Verdict wrong = rule.Judge(argmax, {}, 4, 0.0, 0.5);
  EXPECT_FALSE(wrong.accepted);
  EXPECT_EQ(wrong.token, 3);
}

}  // namespace
}  // namespace kite
