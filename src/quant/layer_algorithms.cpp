#include "quant/layer_algorithms.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <span>
#include <vector>


namespace kite {

namespace {

// The statistics of an input divided column-wise by `s` (x_j / s_j).
LinearInputStats Divided(const LinearInputStats& stats, std::span<const float> s) {
  LinearInputStats out = stats;
  const int64_t in = stats.columns;
  for (int64_t j = 0; j < in; ++j) {
    const double d = s[j];
    if (j < static_cast<int64_t>(out.sum_sq.size())) out.sum_sq[j] /= d * d;
    if (j < static_cast<int64_t>(out.abs_sum.size())) out.abs_sum[j] /= d;
    if (j < static_cast<int64_t>(out.abs_max.size())) out.abs_max[j] /= static_cast<float>(d);
  }
  for (size_t i = 0; i < out.samples.size(); ++i) out.samples[i] /= s[i % in];
  if (!out.gram.empty()) {
    for (int64_t j = 0; j < in; ++j) {
      for (int64_t k = 0; k < in; ++k) out.gram[j * in + k] /= double{s[j]} * s[k];
    }
  }
  return out;
}

}  // namespace

Result<LayerQuantization> QuantizeLayer(const Model& model, int32_t layer,
                                        const CalibrationStats& stats,
                                        const AlgorithmOptions& options,
                                        const GridForWeight& grid_for, ThreadPool* pool) {
  const std::vector<SmoothingSite> sites = LlamaSmoothingSites(model.config(), layer);
  auto stats_of = [&](const std::string& weight) -> Result<const LinearInputStats*> {
    const auto it = stats.linears.find(weight);
    if (it == stats.linears.end()) {
      return NotFound("no calibration statistics for weight '" + weight + "'");
    }
    return &it->second;
  };

  // 1. One scale per site (1 when neither SmoothQuant nor AWQ runs), and per consumer the
  // columns its input is divided by.
  std::vector<ChannelScale> scales;
  std::map<std::string, std::vector<float>> column_scale;  // consumer weight -> s per column
  if (options.smoothquant || options.awq) {
    std::vector<ChannelScale> smooth;
    if (options.smoothquant) {
      smooth = KITE_TRY(SmoothQuantScales(model, layer, stats, options.smoothquant_options));
    }
    for (size_t i = 0; i < sites.size(); ++i) {
      const SmoothingSite& site = sites[i];
      const LinearInputStats& input = *KITE_TRY(stats_of(site.consumers[0]));
      const int64_t in = input.columns;
      std::vector<float> s = ExpandToColumns(
          site, std::vector<float>(in / std::max<int64_t>(1, site.repeat), 1.0f), in);
      if (options.smoothquant) {  // smooth[i].scale is 1 / s per channel
        std::vector<float> channels = smooth[i].scale;
        for (float& v : channels) v = 1.0f / v;
        s = ExpandToColumns(site, channels, in);
      }
      // AWQ searches on the smoothed weights and inputs, where a grid is known; like AWQ itself
      // not at v -> o under grouped-query attention (a scale per column would have to be one
      // per KV head's channel).
      if (options.awq && site.repeat <= 1) {
        std::vector<std::vector<float>> weights;
        std::vector<AwqLinear> linears;
        for (const std::string& name : site.consumers) {
          std::vector<float> w = KITE_TRY(WeightFloats(*KITE_TRY(model.Weight(name))));
          for (size_t k = 0; k < w.size(); ++k) w[k] *= s[k % in];
          weights.push_back(std::move(w));
        }
        for (size_t c = 0; c < weights.size(); ++c) {
          linears.push_back(
              {site.consumers[c], weights[c], static_cast<int64_t>(weights[c].size()) / in});
        }
        const std::unique_ptr<WeightGrid> grid = KITE_TRY(grid_for(site.consumers[0]));
        if (grid != nullptr) {
          AwqOptions awq = options.awq_options;
          awq.clip = false;  // after every fold, on the final weights (step 2)
          const AwqResult found = KITE_TRY(Awq(linears, Divided(input, s), *grid, awq, pool));
          for (int64_t c = 0; c < in; ++c) s[c] *= found.scale[c];
        }
      }
      // Back to producer channels for the fold (1 / s: the producer's output is divided).
      const int64_t channels = site.repeat > 0 ? in / site.repeat : in;
      std::vector<float> producer(channels);
      for (int64_t c = 0; c < in; ++c) {
        const int64_t head = site.repeat > 0 ? c / site.head_dim : 0;
        if (site.repeat > 0 && head % site.repeat != 0) continue;
        const int64_t p =
            site.repeat > 0 ? (head / site.repeat) * site.head_dim + c % site.head_dim : c;
        producer[p] = 1.0f / s[c];
      }
      scales.push_back({.norm = site.producer, .scale = std::move(producer)});
      for (const std::string& name : site.consumers) column_scale[name] = s;
    }
  }
  LayerQuantization result;
  FoldedWeights& folded = result.weights;
  if (!scales.empty()) folded = KITE_TRY(FoldScales(model, scales));

  // 2. Each linear of the block onto its grid. A tied lm_head is quantized as a weight of its
  // own, "output.weight" (the embedding stays as it is).
  for (const SmoothingSite& site : sites) {
    // The consumers of a site read one input: one Hessian factorization serves them all.
    std::optional<GptqHessian> hessian;
    for (const std::string& name : site.consumers) {
      std::unique_ptr<WeightGrid> grid = KITE_TRY(grid_for(name));
      if (grid == nullptr || !(options.gptq || options.seqmse || options.awq)) continue;
      const std::string target = name == "token_embd.weight" ? "output.weight" : name;
      std::vector<float> w =
          folded.contains(target) ? folded[target] : KITE_TRY(WeightFloats(*KITE_TRY(model.Weight(name))));
      const LinearInputStats& raw = *KITE_TRY(stats_of(name));
      const auto cs = column_scale.find(name);
      std::optional<LinearInputStats> divided;  // a copy only when rescaled (a Gram is big)
      const LinearInputStats& input =
          cs != column_scale.end() ? divided.emplace(Divided(raw, cs->second)) : raw;
      const int64_t out = static_cast<int64_t>(w.size()) / input.columns;
      if (options.gptq) {
        if (!hessian) {
          hessian = KITE_TRY(PrepareGptqHessian(name, input, options.gptq_options, pool));
        }
        GptqResult q =
            KITE_TRY(GptqQuantize(name, w, out, *hessian, *grid, options.gptq_options, pool));
        folded[target] = std::move(q.weight);
        result.codes[target] = {std::move(q.codes), std::move(q.scales)};
      } else if (options.seqmse) {
        ClipSearchResult q =
            KITE_TRY(SeqMse(name, w, out, input, *grid, options.seqmse_options, pool));
        folded[target] = std::move(q.quantized);
      } else {
        const SampleColumns x =
            KITE_TRY(TransposeSamples(name, input, input.columns, options.awq_options.max_samples));
        ClipSearchResult q = KITE_TRY(SearchClipRatios(
            name, w, out, x, *grid,
            ClipRatios(options.awq_options.clip_points, options.awq_options.lowest_clip), true,
            pool));
        folded[target] = std::move(q.clipped);
      }
    }
  }
  return result;
}

}  // namespace kite
