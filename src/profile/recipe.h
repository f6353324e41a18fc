// The quantization recipes `kite profile` prices: weight bits, activation width and kind, KV
// cache width (docs/cost_model.md §1).
#pragma once

#include <string>
#include <vector>

#include "backends/npusim/support/npu_support.h"  // ActivationKind
#include "base/status.h"

namespace kite {

struct Recipe {
  std::string name;  // "w4a16"
  int weight_bits = 0;
  int act_bytes = 0;
  int kv_bytes = 0;
  ActivationKind activations = ActivationKind::kInt16;
};

const std::vector<Recipe>& Recipes();
// InvalidInput listing the recipes when `name` is none of them.
Result<Recipe> FindRecipe(const std::string& name);

}  // namespace kite
