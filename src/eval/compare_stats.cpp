#include "eval/compare_stats.h"

#include <algorithm>
#include <cmath>

namespace kite {

namespace {

// Mean and its standard error; the error is 0 for 10 values or fewer, as llama.cpp reports.
Estimate MeanOf(std::span<const double> values) {
  Estimate out;
  const auto n = static_cast<double>(values.size());
  if (values.empty()) return out;
  double sum = 0.0;
  for (double v : values) sum += v;
  out.value = sum / n;
  double squares = 0.0;
  for (double v : values) squares += (v - out.value) * (v - out.value);
  if (values.size() > 10) out.error = std::sqrt(squares / n / (n - 1));
  return out;
}

// Covariance of the two means (of paired values).
double CovarianceOfMeans(std::span<const double> a, std::span<const double> b, double mean_a, double mean_b) {
  const auto n = static_cast<double>(a.size());
  if (a.size() < 10) return 0.0;
  double sum = 0.0;
  for (size_t i = 0; i < a.size(); ++i) sum += (a[i] - mean_a) * (b[i] - mean_b);
  return sum / n / (n - 1);
}

std::vector<Quantile> QuantilesOf(std::vector<double> values, std::initializer_list<double> fractions) {
  std::sort(values.begin(), values.end());
  std::vector<Quantile> out;
  for (double fraction : fractions) out.push_back({fraction, SortedQuantile(values, fraction)});
  return out;
}

}  // namespace

double SortedQuantile(std::span<const double> sorted, double fraction) {
  if (sorted.empty()) return 0.0;
  if (fraction <= 0) return sorted.front();
  if (fraction >= 1) return sorted.back();
  const double position = fraction * static_cast<double>(sorted.size() - 1);
  const auto below = static_cast<size_t>(position);
  const double above_weight = position - static_cast<double>(below);
  return (1 - above_weight) * sorted[below] + above_weight * sorted[std::min(below + 1, sorted.size() - 1)];
}

CompareStats Summarize(std::span<const TokenComparison> tokens) {
  CompareStats stats;
  stats.tokens = static_cast<int64_t>(tokens.size());
  if (tokens.empty()) return stats;
  const size_t n = tokens.size();
  std::vector<double> nll(n), nll_ref(n), difference(n), kld(n), p_diff(n), p_diff2(n), same(n);
  for (size_t i = 0; i < n; ++i) {
    nll[i] = tokens[i].nll;
    nll_ref[i] = tokens[i].nll_ref;
    difference[i] = tokens[i].nll - tokens[i].nll_ref;
    kld[i] = tokens[i].kld;
    p_diff[i] = tokens[i].p_diff;
    p_diff2[i] = tokens[i].p_diff * tokens[i].p_diff;
    same[i] = tokens[i].same_top ? 1.0 : 0.0;
  }
  const Estimate ln_ppl = MeanOf(nll), ln_ppl_ref = MeanOf(nll_ref);
  stats.ppl = {std::exp(ln_ppl.value), std::exp(ln_ppl.value) * ln_ppl.error};
  stats.ppl_ref = {std::exp(ln_ppl_ref.value), std::exp(ln_ppl_ref.value) * ln_ppl_ref.error};
  const double covariance = CovarianceOfMeans(nll, nll_ref, ln_ppl.value, ln_ppl_ref.value);
  if (ln_ppl.error > 0 && ln_ppl_ref.error > 0) {
    stats.ln_ppl_correlation = covariance / (ln_ppl.error * ln_ppl_ref.error);
  }
  stats.ln_ppl_ratio = MeanOf(difference);
  const double ratio = std::exp(stats.ln_ppl_ratio.value);
  stats.ppl_ratio = {ratio, ratio * stats.ln_ppl_ratio.error};
  const double ppl_covariance = stats.ppl.value * stats.ppl_ref.value * covariance;
  stats.ppl_diff.value = stats.ppl.value - stats.ppl_ref.value;
  stats.ppl_diff.error = std::sqrt(std::max(
      0.0, stats.ppl.error * stats.ppl.error + stats.ppl_ref.error * stats.ppl_ref.error - 2 * ppl_covariance));
  stats.kld = MeanOf(kld);
  stats.kld_quantiles = QuantilesOf(kld, {1.0, 0.999, 0.99, 0.95, 0.90, 0.5, 0.10, 0.05, 0.01, 0.001, 0.0});
  stats.p_diff = MeanOf(p_diff);
  stats.p_diff_quantiles =
      QuantilesOf(p_diff, {1.0, 0.999, 0.99, 0.95, 0.90, 0.75, 0.5, 0.25, 0.10, 0.05, 0.01, 0.001, 0.0});
  const Estimate mse = MeanOf(p_diff2);
  const double rms = std::sqrt(mse.value);
  stats.p_diff_rms = {rms, rms > 0 ? 0.5 / rms * mse.error : 0.0};
  const double top = MeanOf(same).value;
  stats.same_top = {top, n > 1 ? std::sqrt(top * (1 - top) / static_cast<double>(n - 1)) : 0.0};
  return stats;
}

}  // namespace kite
