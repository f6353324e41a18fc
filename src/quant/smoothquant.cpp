#include "quant/smoothquant.h"

#include <algorithm>
#include <cmath>

#include "quant/fold_scales.h"

namespace kite {

std::vector<SmoothingSite> LlamaSmoothingSites(const ModelConfig& config, int32_t layer) {
  if (layer == config.n_layers) {
    return {{.producer = "output_norm",
             .consumers = {config.tied_embeddings ? "token_embd.weight" : "output.weight"}}};
  }
  const std::string p = "blk." + std::to_string(layer) + ".";
  return {
      {.producer = p + "attn_norm",
       .consumers = {p + "attn_q.weight", p + "attn_k.weight", p + "attn_v.weight"}},
      {.producer = p + "attn_v",
       .consumers = {p + "attn_output.weight"},
       .repeat = config.n_heads / std::max(1, config.n_kv_heads),
       .head_dim = config.head_dim},
      {.producer = p + "ffn_norm", .consumers = {p + "ffn_gate.weight", p + "ffn_up.weight"}},
      {.producer = p + "ffn_up", .consumers = {p + "ffn_down.weight"}},
  };
}

namespace {

// The producer channel of consumer column c.
int64_t ChannelOf(const SmoothingSite& site, int64_t c) {
  if (site.repeat <= 0) return c;
  const int64_t head = c / site.head_dim, d = c % site.head_dim;
  return (head / site.repeat) * site.head_dim + d;
}

}  // namespace

std::vector<float> ExpandToColumns(const SmoothingSite& site, std::span<const float> channels,
                                   int64_t columns) {
  std::vector<float> out(columns);
  for (int64_t c = 0; c < columns; ++c) out[c] = channels[ChannelOf(site, c)];
  return out;
}

std::vector<float> SmoothingScale(std::span<const float> act_max, std::span<const float> weight_max,
                                  const SmoothingSite& site, float alpha) {
  const int64_t in = static_cast<int64_t>(act_max.size());
  const int64_t channels = site.repeat > 0 ? in / site.repeat : in;
  std::vector<float> x(channels, 0.0f), w(channels, 0.0f);
  for (int64_t c = 0; c < in; ++c) {
    const int64_t j = ChannelOf(site, c);
    x[j] = std::max(x[j], act_max[c]);
    w[j] = std::max(w[j], weight_max[c]);
  }
  std::vector<float> s(channels, 1.0f);
  for (int64_t j = 0; j < channels; ++j) {
    if (x[j] > 0.0f && w[j] > 0.0f) {
      const double v = std::pow(double{x[j]}, alpha) / std::pow(double{w[j]}, 1.0 - alpha);
      s[j] = static_cast<float>(std::clamp(v, 1e-5, 1e5));
    }
  }
  return s;
}

Result<std::vector<ChannelScale>> SmoothQuantScales(const Model& model, int32_t layer,
                                                    const CalibrationStats& stats,
                                                    const SmoothQuantOptions& options) {
  if (!(options.alpha >= 0.0f && options.alpha <= 1.0f)) {
    return InvalidInput("SmoothQuant migration strength " + std::to_string(options.alpha) +
                        ", expected in [0, 1]");
  }
  std::vector<ChannelScale> scales;
  for (const SmoothingSite& site : LlamaSmoothingSites(model.config(), layer)) {
    const std::string what = "SmoothQuant site " + site.producer;
    const auto found = stats.linears.find(site.consumers[0]);
    if (found == stats.linears.end()) {
      return NotFound(what + ": no calibration statistics for '" + site.consumers[0] + "'");
    }
    const std::vector<float>& act_max = found->second.abs_max;
    const int64_t in = static_cast<int64_t>(act_max.size());
    std::vector<float> weight_max(in, 0.0f);
    for (const std::string& name : site.consumers) {
      const TensorView* w = KITE_TRY(model.Weight(name));
      if (w->shape.size() != 2 || w->shape[1] != in) {
        return InvalidInput(what + ": weight '" + name + "' " + ShapeString(w->shape) +
                            ", expected [*, " + std::to_string(in) + "] (its input statistics)");
      }
      auto values = WeightFloats(*w);
      if (!values) return std::unexpected(std::move(values.error()).WithContext(what));
      for (size_t i = 0; i < values->size(); ++i) {
        weight_max[i % in] = std::max(weight_max[i % in], std::fabs((*values)[i]));
      }
    }
    std::vector<float> s = SmoothingScale(act_max, weight_max, site, options.alpha);
    for (float& v : s) v = 1.0f / v;  // the producer's output is divided by s
    scales.push_back({.norm = site.producer, .scale = std::move(s)});
  }
  return scales;
}

}  // namespace kite
