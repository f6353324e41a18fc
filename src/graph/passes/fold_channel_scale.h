// fold_channel_scale: moves a per-input-channel scale s [D] through an RMSNorm into the matmuls
// that read it, leaving what the graph computes unchanged up to rounding:
//
//   norm(x) · w_norm  ->  norm(x) · (w_norm ⊙ s)          (the norm's weight, [D])
//   h · Wᵀ            ->  h · (W[:, k] / s[k])ᵀ           (each matmul reading the norm, [N, D])
//
// so (h ⊙ s) · (W / s)ᵀ = h · Wᵀ. It is the rewrite behind SmoothQuant and AWQ: the activation
// range moves into the weights (or back) before they are quantized.
//
// The scale may also sit on a matmul's output channels (its weight's rows and its bias, [N]),
// when that output reaches exactly one matmul through ops that commute with a per-channel
// scale, the two sites of a Llama block:
//
//   v = h·Wvᵀ -> reshape [T, Hkv, D] -> attention (as v) -> reshape [T, Hq·D] -> o-proj
//       (attention's output for query head h is a mix of v's rows of KV head h / (Hq/Hkv):
//        o-proj's column h·D + d is divided by s[(h / (Hq/Hkv))·D + d])
//   up = h·Wupᵀ -> swiglu (as up: silu(gate) ⊙ up) -> down-proj   (column j divided by s[j]) The new weights are f32
// (exact; a later quantize pass picks their storage) and go into `store` under a new id each:
// the norm's as "<norm node>.weight", a matmul's as "<matmul node>.weight" (a tied lm_head thus
// gets its own "output.weight" and the embedding keeps the old table).
//
// Each scale names an rms_norm node (every reader of its output must be a matmul that reads
// it as x) or a matmul (one of the two chains above), and the output may not be a graph output
// (else the fold would change what they see): the error names the reader. Scales that touch one
// weight twice (attn_norm's reaching attn_v's columns, then attn_v's rows) compose, in order. Weights must be plain weight values (not views) of a dtype
// tensor/dequantize.h reads.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "graph/passes/pass.h"
#include "tensor/weight_store.h"

namespace kite {

struct ChannelScale {
  std::string norm;          // the rms_norm node, e.g. "blk.0.attn_norm", or a matmul ("blk.0.attn_v")
  std::vector<float> scale;  // [D] (the norm's width, the matmul's N), finite and non-zero
};

// The weight value `weight` [..., D] with every row multiplied (or, `divide`, divided) by
// `scale` [D] element-wise, as a new f32 weight `name` in `store` (new id). The pass's one
// arithmetic step; errors name the weight (a view, a dtype that cannot be read, a length).
Result<TensorView> ScaleColumns(WeightStore& store, std::string name, const Value& weight,
                                std::span<const float> scale, bool divide);
// The same with every row r [D] (of a weight [rows, D]) multiplied by scale[r].
Result<TensorView> ScaleRows(WeightStore& store, std::string name, const Value& weight,
                             std::span<const float> scale);

class FoldChannelScale final : public Pass {
 public:
  // `store` must outlive the graphs the pass makes (they read the new weights in place).
  FoldChannelScale(WeightStore* store, std::vector<ChannelScale> scales)
      : store_(store), scales_(std::move(scales)) {}

  std::string_view name() const override { return "fold_channel_scale"; }
  Result<PassOutcome> Run(const Graph& graph) override;

 private:
  WeightStore* store_;
  std::vector<ChannelScale> scales_;
};

}  // namespace kite
