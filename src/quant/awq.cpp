#include "quant/awq.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "quant/output_error.h"

namespace kite {

namespace {

// Σ over linears of the output error of Q(W·diag(s))·diag(1/s) (s empty: round to nearest),
// on up to max_rows output rows of each, evenly spaced.
double ScaledError(std::span<const AwqLinear> linears, std::span<const float> s,
                   const SampleColumns& x, const WeightGrid& grid, int64_t max_rows,
                   ThreadPool* pool) {
  const int64_t in = x.in;
  double total = 0.0;
  for (const AwqLinear& l : linears) {
    const int64_t rows_scored = max_rows > 0 ? std::min(max_rows, l.out) : l.out;
    std::vector<float> delta(rows_scored * in);
    auto rows = [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const int64_t source = r * l.out / rows_scored;
        const std::span<float> row = std::span(delta).subspan(r * in, in);
        const float* w = l.weight.data() + source * in;
        for (int64_t j = 0; j < in; ++j) row[j] = w[j] * (s.empty() ? 1.0f : s[j]);
        grid.QuantizeRow(row);
        for (int64_t j = 0; j < in; ++j) row[j] = row[j] / (s.empty() ? 1.0f : s[j]) - w[j];
      }
    };
    if (pool != nullptr) {
      pool->ParallelForChunks(rows_scored, 16, rows);
    } else {
      rows(0, rows_scored);
    }
    total += OutputSquaredError(delta, rows_scored, x, pool);
  }
  return total;
}

}  // namespace

Result<AwqResult> Awq(std::span<const AwqLinear> linears, const LinearInputStats& stats,
                      const WeightGrid& grid, const AwqOptions& options, ThreadPool* pool) {
  if (linears.empty()) return InvalidInput("AWQ: no linear layers given");
  const std::string what = "AWQ of weight '" + std::string(linears[0].name) + "'";
  const int64_t in = stats.columns;
  if (static_cast<int64_t>(stats.abs_sum.size()) != in || stats.rows_seen <= 0) {
    return InvalidInput(what + ": the calibration statistics hold " +
                        std::to_string(stats.abs_sum.size()) + " mean magnitudes over " +
                        std::to_string(stats.rows_seen) + " rows, expected " + std::to_string(in));
  }
  if (options.scale_points < 1 || options.clip_points < 1 ||
      !(options.lowest_clip > 0.0f && options.lowest_clip <= 1.0f)) {
    return InvalidInput(what + ": " + std::to_string(options.scale_points) + " scale points, " +
                        std::to_string(options.clip_points) + " clip points down to " +
                        std::to_string(options.lowest_clip) +
                        ", expected at least 1 each and a ratio in (0, 1]");
  }
  for (const AwqLinear& l : linears) {
    KITE_RETURN_IF_ERROR(CheckWeight(l.name, l.weight, l.out, in));
    Status columns = grid.CheckColumns(in);
    if (!columns) {
      return std::unexpected(
          std::move(columns.error()).WithContext("AWQ of weight '" + std::string(l.name) + "'"));
    }
  }
  const SampleColumns x =
      KITE_TRY(TransposeSamples(linears[0].name, stats, in, options.max_samples));

  AwqResult result;
  result.scale.assign(in, 1.0f);  // α = 0 unless a candidate scores lower (NaN scores never do)
  // The search scores up to max_rows rows of each linear; the reported errors take all.
  const double rtn_scored = ScaledError(linears, {}, x, grid, options.max_rows, pool);
  result.rtn_error = options.max_rows > 0 ? ScaledError(linears, {}, x, grid, 0, pool) : rtn_scored;
  double best = std::numeric_limits<double>::infinity();
  std::vector<float> s(in);
  for (int32_t i = 0; i < options.scale_points; ++i) {
    const float alpha = static_cast<float>(i) / static_cast<float>(options.scale_points);
    float lo = std::numeric_limits<float>::infinity(), hi = 0.0f;
    for (int64_t j = 0; j < in; ++j) {
      const double mean = stats.abs_sum[j] / static_cast<double>(stats.rows_seen);
      s[j] = std::max(1e-4f, static_cast<float>(std::pow(mean, alpha)));
      lo = std::min(lo, s[j]);
      hi = std::max(hi, s[j]);
    }
    const float norm = std::sqrt(lo * hi);
    for (float& v : s) v /= norm;
    const double e = i == 0 ? rtn_scored : ScaledError(linears, s, x, grid, options.max_rows, pool);
    if (e < best) {
      best = e;
      result.alpha = alpha;
      result.scale = s;
    }
  }
  if (result.alpha == 0.0f) std::fill(result.scale.begin(), result.scale.end(), 1.0f);

  // The clipping search sees what the quantizer will: W·diag(s) against inputs x / s.
  SampleColumns scaled = x;
  for (int64_t j = 0; j < in; ++j) {
    for (int64_t t = 0; t < x.rows; ++t) scaled.xt[j * x.rows + t] /= result.scale[j];
  }
  const std::vector<float> ratios = options.clip
                                        ? ClipRatios(options.clip_points, options.lowest_clip)
                                        : std::vector<float>{1.0f};
  result.error = 0.0;
  for (const AwqLinear& l : linears) {
    std::vector<float> w(l.out * in);
    for (int64_t r = 0; r < l.out; ++r) {
      for (int64_t j = 0; j < in; ++j) w[r * in + j] = l.weight[r * in + j] * result.scale[j];
    }
    ClipSearchResult clip =
        KITE_TRY(SearchClipRatios(l.name, w, l.out, scaled, grid, ratios, true, pool));
    // (Q - W·diag(s)) against x / s is (Q·diag(1/s) - W) against x: comparable to rtn_error.
    for (size_t i = 0; i < w.size(); ++i) clip.quantized[i] -= w[i];
    result.error += OutputSquaredError(clip.quantized, l.out, scaled, pool);
    result.weights.push_back(std::move(clip.clipped));
    result.clip_ratio.push_back(std::move(clip.ratio));
  }
  return result;
}

}  // namespace kite
