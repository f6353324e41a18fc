// decompose_rope: RoPE rewritten into ops a chip without FP16 runs (the fused op computes its
// angles and sin/cos in fp16; backends/npusim/support/rope_rule.cpp). The angles become tables
// computed once, in double, for every position the graph can see:
//
//   cos [P, D], sin [P, D]: per rotary pair i at position p, cos(p·inv_freq[i]) and ∓sin(...)
//                            times attention_factor (1 and 0 for dims past rotary_dim)
//   R [D, D]: x·Rᵀ swaps the two halves of every pair (rotate-half or interleaved)
//
//   out = x ⊙ cos[positions] + (x·Rᵀ) ⊙ sin[positions]      (gathers by embedding, [T, 1, D])
//
// which is RopeAttrs' definition term by term, so it holds for every mode and scaling. Tables go
// into `store` as "<node>.cos", "<node>.sin", "<node>.rotate"; ropes with the same attributes
// share them. A position at or past P is refused by the gather when the graph runs. Only the
// rope nodes named in `nodes` are rewritten (InvalidInput for a name that is none).
#pragma once

#include <cstdint>
#include <set>
#include <string>

#include "graph/passes/pass.h"
#include "tensor/weight_store.h"

namespace kite {

class DecomposeRope final : public Pass {
 public:
  // `positions`: the tables' P (the static context). `store` must outlive the graphs made.
  DecomposeRope(WeightStore* store, std::set<std::string> nodes, int64_t positions)
      : store_(store), nodes_(std::move(nodes)), positions_(positions) {}

  std::string_view name() const override { return "decompose_rope"; }
  Result<PassOutcome> Run(const Graph& graph) override;

 private:
  WeightStore* store_;
  std::set<std::string> nodes_;
  int64_t positions_;
};

}  // namespace kite
