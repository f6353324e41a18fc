#include "cli/eval_compare_report.h"

#include <cstdarg>
#include <cstdio>

namespace kite::cli {

namespace {

void Append(std::string* out, const char* format, ...) {
  char line[256];
  va_list args;
  va_start(args, format);
  std::vsnprintf(line, sizeof line, format, args);
  va_end(args);
  out->append(line);
}

// "99.9%", "Median", "Maximum", " 5.0%" as llama.cpp labels its rows.
std::string QuantileLabel(double fraction) {
  if (fraction >= 1.0) return "Maximum";
  if (fraction <= 0.0) return "Minimum";
  if (fraction == 0.5) return "Median ";
  char label[16];
  std::snprintf(label, sizeof label, "%4.1f%%  ", 100.0 * fraction);
  return label;
}

nlohmann::ordered_json EstimateJson(const Estimate& estimate) {
  return {{"value", estimate.value}, {"error", estimate.error}};
}

nlohmann::ordered_json QuantilesJson(const std::vector<Quantile>& quantiles) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const Quantile& q : quantiles) out.push_back({{"fraction", q.fraction}, {"value", q.value}});
  return out;
}

}  // namespace

std::string CompareText(const CompareStats& s) {
  std::string out;
  Append(&out, "====== Perplexity statistics (%lld tokens) ======\n", static_cast<long long>(s.tokens));
  Append(&out, "Mean PPL(Q)                   : %10.6f ± %10.6f\n", s.ppl.value, s.ppl.error);
  Append(&out, "Mean PPL(base)                : %10.6f ± %10.6f\n", s.ppl_ref.value, s.ppl_ref.error);
  Append(&out, "Cor(ln(PPL(Q)), ln(PPL(base))): %6.2f%%\n", 100.0 * s.ln_ppl_correlation);
  Append(&out, "Mean ln(PPL(Q)/PPL(base))     : %10.6f ± %10.6f\n", s.ln_ppl_ratio.value, s.ln_ppl_ratio.error);
  Append(&out, "Mean PPL(Q)/PPL(base)         : %10.6f ± %10.6f\n", s.ppl_ratio.value, s.ppl_ratio.error);
  Append(&out, "Mean PPL(Q)-PPL(base)         : %10.6f ± %10.6f\n", s.ppl_diff.value, s.ppl_diff.error);
  Append(&out, "\n====== KL divergence statistics ======\n");
  Append(&out, "Mean    KLD: %10.6f ± %10.6f\n", s.kld.value, s.kld.error);
  for (const Quantile& q : s.kld_quantiles) Append(&out, "%s KLD: %10.6f\n", QuantileLabel(q.fraction).c_str(), q.value);
  Append(&out, "\n====== Token probability statistics ======\n");
  Append(&out, "Mean    Δp: %6.3f ± %5.3f %%\n", 100.0 * s.p_diff.value, 100.0 * s.p_diff.error);
  for (const Quantile& q : s.p_diff_quantiles) {
    Append(&out, "%s Δp: %6.3f%%\n", QuantileLabel(q.fraction).c_str(), 100.0 * q.value);
  }
  Append(&out, "RMS Δp    : %6.3f ± %5.3f %%\n", 100.0 * s.p_diff_rms.value, 100.0 * s.p_diff_rms.error);
  Append(&out, "Same top p: %6.3f ± %5.3f %%\n", 100.0 * s.same_top.value, 100.0 * s.same_top.error);
  return out;
}

nlohmann::ordered_json CompareJson(const CompareStats& s) {
  return {{"tokens", s.tokens},
          {"ppl", EstimateJson(s.ppl)},
          {"ppl_ref", EstimateJson(s.ppl_ref)},
          {"ln_ppl_correlation", s.ln_ppl_correlation},
          {"ln_ppl_ratio", EstimateJson(s.ln_ppl_ratio)},
          {"ppl_ratio", EstimateJson(s.ppl_ratio)},
          {"ppl_diff", EstimateJson(s.ppl_diff)},
          {"kld", EstimateJson(s.kld)},
          {"kld_quantiles", QuantilesJson(s.kld_quantiles)},
          {"p_diff", EstimateJson(s.p_diff)},
          {"p_diff_quantiles", QuantilesJson(s.p_diff_quantiles)},
          {"p_diff_rms", EstimateJson(s.p_diff_rms)},
          {"same_top", EstimateJson(s.same_top)}};
}

}  // namespace kite::cli
