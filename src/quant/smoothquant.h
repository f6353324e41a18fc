// SmoothQuant (Xiao et al. 2022, "SmoothQuant: Accurate and Efficient Post-Training
// Quantization for Large Language Models"): activations have a few channels far larger than
// the rest, which per-tensor 8-bit activation encodings cannot hold; weights do not. Dividing
// input channel j by
//
//   s_j = max|X_j|^α / max|W_j|^(1-α)          (α: the migration strength, 0.5 by default)
//
// and multiplying the weights' column j by it moves part of the range into the weights, where
// per-channel encodings absorb it. The division folds exactly into what produces the input
// (graph/passes/fold_channel_scale.h): every smoothing site of a Llama block is
//
//   attn_norm -> attn_q, attn_k, attn_v   ffn_norm -> ffn_gate, ffn_up   (the norms' weights)
//   attn_v -> attn_output     (v's rows; one scale per v channel, shared by the query heads of
//                              its KV head, so taken over all of their columns)
//   ffn_up -> ffn_down        (up's rows; swiglu = silu(gate) ⊙ up is linear in up)
//
// and, for the head, output_norm -> output.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "graph/passes/fold_channel_scale.h"
#include "models/model.h"
#include "quant/linear_stats.h"

namespace kite {

struct SmoothQuantOptions {
  float alpha = 0.5f;  // migration strength, [0, 1]
};

// One site: the node whose output channels carry the scale and the weights reading them.
struct SmoothingSite {
  std::string producer;                // "blk.0.attn_norm", "blk.0.attn_v", "blk.0.ffn_up"
  std::vector<std::string> consumers;  // "blk.0.attn_q.weight", ...
  // attn_v -> attn_output: consumer column h·head_dim + d is producer channel
  // (h / repeat)·head_dim + d (repeat = query heads per KV head); 0: the same channel.
  int64_t repeat = 0;
  int64_t head_dim = 0;
};

// The sites of block `layer` (layer == n_layers: the head's).
std::vector<SmoothingSite> LlamaSmoothingSites(const ModelConfig& config, int32_t layer);

// A per-producer-channel vector as the site's consumers see it, one value per input column.
std::vector<float> ExpandToColumns(const SmoothingSite& site, std::span<const float> channels,
                                   int64_t columns);

// s per producer channel from the consumers' input maxima act_max [in] and their weights'
// column maxima weight_max [in] (each channel over the columns that map to it). A channel never
// seen (or with zero weights) keeps s = 1.
std::vector<float> SmoothingScale(std::span<const float> act_max, std::span<const float> weight_max,
                                  const SmoothingSite& site, float alpha);

// The scales of every site of block `layer`, as fold_channel_scale takes them (1 / s on the
// producer), from `stats` (keyed by weight name: each site's first consumer's abs_max) and the
// model's weights. Errors name the site and what is missing.
Result<std::vector<ChannelScale>> SmoothQuantScales(const Model& model, int32_t layer,
                                                    const CalibrationStats& stats,
                                                    const SmoothQuantOptions& options);

}  // namespace kite
