// decompose_softcap: cap·tanh(x / cap) rewritten into ops an NPU without a tanh runs, exactly in
// real arithmetic, since tanh(y) = 2σ(2y) - 1 and σ(a) is the first entry of softmax([a, 0]):
//
//   x [..., N] -> reshape [..., N, 1] -> matmul by [[2/cap], [0]]   -> [..., N, 2] = (2x/cap, 0)
//              -> softmax over the pair                              -> (σ(2x/cap), 1 - σ)
//              -> matmul by [[2·cap, 0]] + bias [-cap]               -> [..., N, 1]
//              -> reshape [..., N] (named as the softcap node, so readers and outputs keep it)
//
// The small weights go into `store` as "<node>.pair" and "<node>.scale" (+ ".bias"). Only the
// softcap nodes named in `nodes` are rewritten (the support rules say which: backends/npusim/
// support/npu_support.h); a name that is no softcap node is InvalidInput.
#pragma once

#include <set>
#include <string>

#include "graph/passes/pass.h"
#include "tensor/weight_store.h"

namespace kite {

class DecomposeSoftcap final : public Pass {
 public:
  // `store` must outlive the graphs the pass makes.
  DecomposeSoftcap(WeightStore* store, std::set<std::string> nodes)
      : store_(store), nodes_(std::move(nodes)) {}

  std::string_view name() const override { return "decompose_softcap"; }
  Result<PassOutcome> Run(const Graph& graph) override;

 private:
  WeightStore* store_;
  std::set<std::string> nodes_;
};

}  // namespace kite
