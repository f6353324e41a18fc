#include "profile/recipe.h"

namespace kite {

const std::vector<Recipe>& Recipes() {
  static const std::vector<Recipe> recipes = {
      {"w4a16", 4, 2, 2, ActivationKind::kInt16},
      {"w8a16", 8, 2, 2, ActivationKind::kInt16},
      {"w8a8", 8, 1, 1, ActivationKind::kInt8},
      // 4-bit weights, fp16 activations: AI Hub's "w4 (fp16 activations)" rows.
      {"w4f16", 4, 2, 2, ActivationKind::kFp16},
  };
  return recipes;
}

Result<Recipe> FindRecipe(const std::string& name) {
  std::string names;
  for (const Recipe& recipe : Recipes()) {
    if (recipe.name == name) return recipe;
    names += (names.empty() ? "" : ", ") + recipe.name;
  }
  return InvalidInput("unknown recipe '" + name + "'; the recipes are: " + names);
}

}  // namespace kite
